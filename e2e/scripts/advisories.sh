#!/usr/bin/env bash
# e2e/scripts/advisories.sh CARGO_DENY: placeholder replaced below in this session
echo "ADVISORIES NOT CHECKED (e2e/scripts/advisories.sh is being written)"
