"""One version for the crates, the chart and the image (docs/versioning.md): the workspace Cargo.toml's
`[workspace.package] version` is the source; Chart.yaml's `version` and `appVersion`, the default image tag and
the changelog must follow it."""

import re
import tomllib

import yaml

from test_chart import CHART, REPO, helm, one, render  # noqa: F401 (helm is a fixture)


def workspace_version():
    return tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]


def test_every_crate_inherits_the_workspace_version():
    members = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["members"]
    for m in members:
        package = tomllib.loads((REPO / m / "Cargo.toml").read_text())["package"]
        assert package.get("version") == {"workspace": True}, \
            f"{m}/Cargo.toml: version = {package.get('version')!r}; expected version.workspace = true (docs/versioning.md)"


def test_chart_version_and_app_version_are_the_workspace_version():
    want = workspace_version()
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    for key in ("version", "appVersion"):
        assert str(chart[key]) == want, (
            f"charts/aws-lb-controller/Chart.yaml {key}: {chart[key]!r}; expected {want!r}, the workspace version "
            f"in Cargo.toml: set both to the same version when cutting a release (docs/versioning.md)")


def test_default_image_tag_is_the_workspace_version(helm, tmp_path):
    want = workspace_version()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["image"]["tag"] == "", \
        f"values.yaml image.tag is {values['image']['tag']!r}; expected empty (the chart's appVersion, {want})"
    image = one(render(helm, tmp_path, {}), "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.rsplit(":", 1)[1] == want, f"rendered image {image!r}; expected the tag {want!r}"


def test_changelog_has_unreleased_and_the_current_version():
    want = workspace_version()
    text = (REPO / "CHANGELOG.md").read_text()
    sections = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert sections and sections[0] == "Unreleased", \
        f"CHANGELOG.md sections {sections}; expected '## [Unreleased]' first (Keep a Changelog)"
    assert want in sections, \
        f"CHANGELOG.md has no '## [{want}]' section for the workspace version; sections: {sections}"
