"""The chart's alerts as Prometheus tests them: `promtool check rules` on the rendered PrometheusRule's groups and
`promtool test rules` on the unit tests in charts/tests/alerts/ (every alert: fires, stays quiet, `for:` respected).

promtool comes from Debian's `prometheus` package (e2e/test-all installs it); it is $LBC_PROMTOOL_BIN or `promtool`
on the PATH. Without it these tests are skipped, unless LBC_E2E_REQUIRED=1 (CI): then they fail.

The unit tests must be able to fail: each alert's expression is broken on purpose (never true, always true,
`for:` dropped) and promtool must then report a failure, so an alert without a firing case, a quiet case or a
pending-window case cannot slip through.
"""
import copy
import os
import shutil
import subprocess

import pytest
import yaml

from test_chart import MATRIX, REPO, helm, one, render  # noqa: F401 (helm is a fixture)

TESTS = REPO / "charts/tests/alerts"


@pytest.fixture(scope="session")
def promtool():
    b = os.environ.get("LBC_PROMTOOL_BIN") or shutil.which("promtool")
    if not b:
        why = "promtool is not installed: apt-get install prometheus (Debian's package ships promtool)"
        if os.environ.get("LBC_E2E_REQUIRED") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return b


def promtool_run(promtool, *args, cwd=None):
    return subprocess.run([promtool, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def rules(helm, tmp_path_factory):
    """The rendered PrometheusRule's `spec` (release `lbc` in kube-system, default thresholds), as a rule file."""
    docs = render(helm, tmp_path_factory.mktemp("render"), MATRIX["monitoring"])
    return {"groups": one(docs, "PrometheusRule")["spec"]["groups"]}


def unit_test(promtool, tmp_path, rules, name):
    """Runs the unit tests `name` against `rules`, both written into tmp_path (the tests name `rules.yaml`)."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False, width=1000))
    shutil.copy(TESTS / name, tmp_path / name)
    return promtool_run(promtool, "test", "rules", name, cwd=tmp_path)


def alerts(rules):
    return [r for g in rules["groups"] for r in g["rules"] if "alert" in r]


def alerts_under_test(name):
    doc = yaml.safe_load((TESTS / name).read_text())
    return {t["alertname"] for g in doc["tests"] for t in g.get("alert_rule_test", [])}


def test_rules_pass_promtool_check(promtool, rules, tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False, width=1000))
    p = promtool_run(promtool, "check", "rules", path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"SUCCESS: {len(alerts(rules))} rules found" in p.stdout, p.stdout


def test_promtool_check_fails_on_a_broken_expression(promtool, rules, tmp_path):
    broken = copy.deepcopy(rules)
    broken["groups"][0]["rules"][0]["expr"] = "sum(rate(awslbc_reconcile_errors_total[10m])"
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(broken, sort_keys=False, width=1000))
    p = promtool_run(promtool, "check", "rules", path)
    assert p.returncode != 0 and "unclosed left parenthesis" in p.stdout + p.stderr, p.stdout + p.stderr


def test_every_alert_has_unit_tests(rules):
    names = {r["alert"] for r in alerts(rules)}
    assert len(names) >= 7, names
    assert alerts_under_test("aws-lb-controller.test.yaml") == names


def test_alert_unit_tests_pass(promtool, rules, tmp_path):
    p = unit_test(promtool, tmp_path, rules, "aws-lb-controller.test.yaml")
    assert p.returncode == 0 and "SUCCESS" in p.stdout, p.stdout + p.stderr


MUTATIONS = {
    # never fires: the test that expects it to fire must fail
    "never": lambda r: r.update(expr="vector(0) > 1"),
    # always fires (no labels): the tests that expect quiet, or exact labels, must fail
    "always": lambda r: r.update(expr="vector(1)"),
    # fires at once: the test of the pending window must fail
    "no-for": lambda r: r.pop("for"),
}


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_alert_unit_tests_catch_a_broken_alert(promtool, rules, tmp_path, mutation):
    caught, missed = [], []
    for i, r in enumerate(alerts(rules)):
        if mutation == "no-for" and "for" not in r:
            continue
        broken = copy.deepcopy(rules)
        target = alerts(broken)[i]
        MUTATIONS[mutation](target)
        d = tmp_path / f"{mutation}-{i}"
        d.mkdir()
        p = unit_test(promtool, d, broken, "aws-lb-controller.test.yaml")
        (caught if p.returncode != 0 and f"alertname: {r['alert']}," in p.stdout + p.stderr else missed).append(r["alert"])
    assert not missed, f"the unit tests still pass with {mutation!r} in {missed}: add a test case that catches it"
    assert caught
