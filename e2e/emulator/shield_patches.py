"""awsemu patches for Shield Advanced (moto 5.2.5 keeps protections and a subscription, but):

  * GetSubscriptionState (missing in moto) answers ACTIVE once CreateSubscription ran, INACTIVE before, as AWS
    does for an account with / without a Shield Advanced subscription;
  * CreateProtection is refused without a subscription, as AWS refuses it (moto created the protection);
    ResourceNotFoundException "The subscription does not exist." is ours (moto's DescribeSubscription wording);
  * DeleteSubscription (deprecated in AWS, missing in moto) ends the subscription, so a test can return the
    account to INACTIVE; ours.
"""

from __future__ import annotations

import json
from typing import Any


def install() -> None:
    from moto.shield import models as m
    from moto.shield import responses as r

    def get_subscription_state(self: Any) -> str:
        state = "ACTIVE" if self.shield_backend.subscription is not None else "INACTIVE"
        return json.dumps({"SubscriptionState": state})

    def delete_subscription(self: Any) -> str:
        self.shield_backend.subscription = None
        return "{}"

    r.ShieldResponse.get_subscription_state = get_subscription_state
    r.ShieldResponse.delete_subscription = delete_subscription

    original = m.ShieldBackend.create_protection

    def create_protection(self: Any, name: str, resource_arn: str, tags: Any) -> str:
        if self.subscription is None:
            raise m.ResourceNotFoundException("The subscription does not exist.")
        return original(self, name, resource_arn, tags)

    m.ShieldBackend.create_protection = create_protection
