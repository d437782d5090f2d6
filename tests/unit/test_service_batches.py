"""Rolling restarts: batches of hosts (plugins/filter/service_batches.py)."""

import pytest
from ansible.errors import AnsibleFilterError

from conftest import load_plugin

sb = load_plugin("filter", "service_batches")


def test_one_host_at_a_time_by_default_in_order():
    assert sb.service_batches(["w1", "w2", "w3"]) == [["w1"], ["w2"], ["w3"]]


def test_batches_of_two_keep_the_order_and_the_rest():
    assert sb.service_batches(["w1", "w2", "w3"], 2) == [["w1", "w2"], ["w3"]]
    assert sb.service_batches(["w1", "w2", "w3"], "2") == [["w1", "w2"], ["w3"]]


@pytest.mark.parametrize(
    "size, expected",
    [("50%", [["a", "b"], ["c", "d"]]), ("25%", [["a"], ["b"], ["c"], ["d"]]), ("10%", [["a"], ["b"], ["c"], ["d"]]),
     ("100%", [["a", "b", "c", "d"]]), (" 75 % ", [["a", "b", "c"], ["d"]])],
)
def test_percentages_round_down_but_never_below_one_host(size, expected):
    assert sb.service_batches(["a", "b", "c", "d"], size) == expected


def test_no_hosts_no_batch():
    assert sb.service_batches([], 1) == []
    assert sb.service_batches([], "50%") == []


def test_bigger_than_the_list_is_one_batch():
    assert sb.service_batches(["a", "b"], 5) == [["a", "b"]]


@pytest.mark.parametrize("size", [0, -1, "0%", "120%", "x", "%", None, True, 1.5j])
def test_bad_sizes_are_refused_naming_the_value(size):
    with pytest.raises(AnsibleFilterError) as err:
        sb.service_batches(["a"], size)
    assert repr(size) in str(err.value)


def test_a_string_is_not_a_host_list():
    with pytest.raises(AnsibleFilterError):
        sb.service_batches("w1,w2", 1)
