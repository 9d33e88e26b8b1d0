//! Check 9: our CRDs are installed, serve the versions this controller reads and writes, and
//! every version objects are stored in still exists (Helm never upgrades CRDs: an old chart's CRDs
//! stay behind after `helm upgrade`).

use super::Verdict;

pub const CHECK: &str = "crds";
const FIX: &str = "apply the CRDs of this release: kubectl apply -f charts/aws-lb-controller/crds/crds.yaml \
                   (or: aws-lb-controller crd | kubectl apply -f -); Helm does not upgrade CRDs";

/// One version as the cluster has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionInfo {
    pub name: String,
    pub served: bool,
    pub storage: bool,
}

/// A CRD as found in the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdInfo {
    pub versions: Vec<VersionInfo>,
    pub stored_versions: Vec<String>,
}

/// `name`: e.g. `targetgroupbindings.elbv2.k8s.aws`; `wanted`: the versions this build serves;
/// `found`: the cluster's CRD of that name, if any.
pub fn check(name: &str, wanted: &[String], found: Option<&CrdInfo>) -> Verdict {
    let object = format!("CustomResourceDefinition {name}");
    let expected = format!("served versions including {}", wanted.join(", "));
    let Some(crd) = found else {
        return Verdict::fail(CHECK, object, "not installed", expected, FIX);
    };
    let served: Vec<&str> = crd.versions.iter().filter(|v| v.served).map(|v| v.name.as_str()).collect();
    let missing: Vec<&String> = wanted.iter().filter(|w| !served.contains(&w.as_str())).collect();
    let storage: Vec<&str> = crd.versions.iter().filter(|v| v.storage).map(|v| v.name.as_str()).collect();
    let describe = format!(
        "served [{}], storage [{}], stored [{}]",
        served.join(", "),
        storage.join(", "),
        crd.stored_versions.join(", ")
    );
    if !missing.is_empty() {
        let missing: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        return Verdict::fail(CHECK, object, format!("{describe}: {} not served", missing.join(", ")), expected, FIX);
    }
    let gone: Vec<&str> = crd
        .stored_versions
        .iter()
        .filter(|s| !crd.versions.iter().any(|v| &v.name == *s && v.served))
        .map(String::as_str)
        .collect();
    if !gone.is_empty() {
        return Verdict::warn(
            CHECK,
            object,
            format!("{describe}: objects stored as {} which is no longer served", gone.join(", ")),
            "every stored version served (or migrated)",
            "rewrite the objects in the storage version (read and write each back), then drop the old version \
             from status.storedVersions",
        );
    }
    Verdict::ok(CHECK, object, describe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn v(name: &str, served: bool, storage: bool) -> VersionInfo {
        VersionInfo { name: name.into(), served, storage }
    }

    #[test]
    fn table() {
        let want = vec!["v1beta1".to_string()];
        let crd = |versions: Vec<VersionInfo>, stored: &[&str]| CrdInfo {
            versions,
            stored_versions: stored.iter().map(|s| s.to_string()).collect(),
        };
        let cases: Vec<(&str, Option<CrdInfo>, Status, &str)> = vec![
            ("current", Some(crd(vec![v("v1beta1", true, true)], &["v1beta1"])), Status::Ok, "served [v1beta1]"),
            (
                "albc's two versions",
                Some(crd(vec![v("v1alpha1", true, false), v("v1beta1", true, true)], &["v1alpha1", "v1beta1"])),
                Status::Ok,
                "served [v1alpha1, v1beta1]",
            ),
            ("missing", None, Status::Fail, "not installed"),
            (
                "old chart",
                Some(crd(vec![v("v1alpha1", true, true)], &["v1alpha1"])),
                Status::Fail,
                "v1beta1 not served",
            ),
            ("unserved", Some(crd(vec![v("v1beta1", false, true)], &["v1beta1"])), Status::Fail, "v1beta1 not served"),
            (
                "stored but unserved",
                Some(crd(vec![v("v1alpha1", false, false), v("v1beta1", true, true)], &["v1alpha1", "v1beta1"])),
                Status::Warn,
                "stored as v1alpha1",
            ),
        ];
        for (name, found, want_status, text) in cases {
            let got = check("targetgroupbindings.elbv2.k8s.aws", &want, found.as_ref());
            assert_eq!(got.status, want_status, "{name}: {got:?}");
            assert!(got.found.contains(text), "{name}: {got:?}");
        }
    }
}
