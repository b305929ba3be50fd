"""Every rule's docs examples are tests: the bad one must fire the rule, the good one must not."""

import pytest

from plint.check import check_paths
from plint.rules.base import all_rules

RULES = list(all_rules().values())


def _codes(tmp_path, example):
    for name, text in example.files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / example.main])
    return [d.code for d in result.diagnostics]


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_bad_example_fires(rule, tmp_path):
    assert rule.code in _codes(tmp_path, rule.docs.bad)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_good_example_stays_quiet(rule, tmp_path):
    assert rule.code not in _codes(tmp_path, rule.docs.good)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_record_is_complete(rule):
    assert rule.name == rule.name.lower() and " " not in rule.name
    assert rule.summary and rule.docs.what and rule.docs.why and rule.docs.fix
