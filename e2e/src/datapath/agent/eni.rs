//! Pod ENIs in the AWS emulator, as Cilium's ENI mode would have them, so the controller's
//! backend security-group pass finds each pod IP's ENI (as for `e2e/pods`): one ENI per pod IP,
//! the IP as its primary address (the emulator's `addresses.private-ip-address` filter matches
//! primary addresses only), created before the pod reports its IP and deleted after its
//! namespace is gone. A tiny EC2 Query API client (form POST, XML answers); the emulator does
//! not check signatures, so the Authorization header only names region and service.

use anyhow::{Context, Result, ensure};
use std::net::Ipv4Addr;

#[derive(Clone, Debug)]
pub struct Enis {
    endpoint: String,
    region: String,
    http: reqwest::Client,
}

/// The text of every `<tag>…</tag>` in `xml`.
fn all<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    xml.split(&open).skip(1).filter_map(|rest| rest.split(&close).next()).collect()
}

impl Enis {
    pub fn new(endpoint: &str, region: &str) -> Self {
        let http = reqwest::Client::builder().no_proxy().build().unwrap_or_default();
        Self { endpoint: endpoint.trim_end_matches('/').to_string(), region: region.to_string(), http }
    }

    async fn call(&self, params: &[(String, String)]) -> Result<String> {
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential=testing/20260101/{}/ec2/aws4_request, SignedHeaders=host, Signature=0",
            self.region
        );
        let action = params.iter().find(|(k, _)| k == "Action").map(|(_, v)| v.clone()).unwrap_or_default();
        let mut form = vec![("Version".to_string(), "2016-11-15".to_string())];
        form.extend_from_slice(params);
        let resp = self
            .http
            .post(format!("{}/", self.endpoint))
            .header("Authorization", auth)
            .form(&form)
            .send()
            .await
            .with_context(|| format!("EC2 {action} at {}", self.endpoint))?;
        let status = resp.status();
        let body = resp.text().await?;
        ensure!(status.is_success(), "EC2 {action} at {} answered {status}: {body}", self.endpoint);
        Ok(body)
    }

    /// Creates the ENI of pod `key` (`ns/name`) holding `ip` in `subnet`, after deleting ENIs
    /// left holding that address. Returns its id.
    pub async fn create(
        &self,
        key: &str,
        agent: &str,
        ip: Ipv4Addr,
        subnet: &str,
        security_group: Option<&str>,
    ) -> Result<String> {
        let p = |k: &str, v: &str| (k.to_string(), v.to_string());
        for id in self.ids("addresses.private-ip-address", &ip.to_string()).await? {
            self.delete(&id).await?;
        }
        let mut params = vec![
            p("Action", "CreateNetworkInterface"),
            p("SubnetId", subnet),
            p("PrivateIpAddress", &ip.to_string()),
            p("Description", &format!("lbc-e2e pod {key}")),
            p("TagSpecification.1.ResourceType", "network-interface"),
            p("TagSpecification.1.Tag.1.Key", "lbc-e2e/pod"),
            p("TagSpecification.1.Tag.1.Value", key),
            p("TagSpecification.1.Tag.2.Key", "lbc-e2e/node-agent"),
            p("TagSpecification.1.Tag.2.Value", agent),
        ];
        if let Some(sg) = security_group {
            params.push(p("SecurityGroupId.1", sg));
        }
        let created = self.call(&params).await?;
        all(&created, "networkInterfaceId").first().map(|s| s.to_string()).with_context(|| {
            format!("CreateNetworkInterface for {key} ({ip}) answered no networkInterfaceId: {created}")
        })
    }

    /// Ids of the ENIs matching one DescribeNetworkInterfaces filter.
    pub async fn ids(&self, filter: &str, value: &str) -> Result<Vec<String>> {
        let p = |k: &str, v: &str| (k.to_string(), v.to_string());
        let found = self
            .call(&[p("Action", "DescribeNetworkInterfaces"), p("Filter.1.Name", filter), p("Filter.1.Value.1", value)])
            .await?;
        Ok(all(&found, "networkInterfaceId").into_iter().map(str::to_string).collect())
    }

    /// Deletes every ENI tagged `lbc-e2e/node-agent=agent`.
    pub async fn delete_tagged(&self, agent: &str) -> Result<()> {
        for id in self.ids("tag:lbc-e2e/node-agent", agent).await? {
            self.delete(&id).await?;
        }
        Ok(())
    }

    /// Deletes ENI `id` (gone already is fine).
    pub async fn delete(&self, id: &str) -> Result<()> {
        let p = |k: &str, v: &str| (k.to_string(), v.to_string());
        match self.call(&[p("Action", "DeleteNetworkInterface"), p("NetworkInterfaceId", id)]).await {
            Err(e) if format!("{e:#}").contains("NotFound") => Ok(()),
            r => r.map(|_| ()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_every_tag() {
        let xml =
            "<a><networkInterfaceId>eni-1</networkInterfaceId><x/><networkInterfaceId>eni-2</networkInterfaceId></a>";
        assert_eq!(super::all(xml, "networkInterfaceId"), vec!["eni-1", "eni-2"]);
        assert!(super::all("<a/>", "networkInterfaceId").is_empty());
    }
}
