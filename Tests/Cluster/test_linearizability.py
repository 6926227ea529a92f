"""Unit tests for the checker: hand-made histories that are and are not linearizable. The checker is
what the fault tests trust, so each kind of anomaly they look for must be shown to be caught here."""
import random

import pytest

from linearizability import UNKNOWN, Op, check, check_key, prune_unobserved


def w(p, v, t0, t1, key="k", status="ok"):
    return Op(p, key, "write", value=v, invoke=t0, complete=t1, status=status)


def r(p, v, t0, t1, key="k"):
    return Op(p, key, "read", result=v, invoke=t0, complete=t1)


def cas(p, expected, v, t0, t1, status="ok", current=None, key="k"):
    return Op(p, key, "cas", expected=expected, value=v, result=current, invoke=t0, complete=t1, status=status)


def test_sequential_history_is_linearizable():
    assert check([w(0, "1", 0, 1), r(0, "1", 2, 3), cas(0, "1", "2", 4, 5), r(1, "2", 6, 7)]).ok


def test_initial_value_is_null():
    assert check([r(0, None, 0, 1)]).ok
    assert not check([r(0, "1", 0, 1)]).ok


def test_stale_read_is_a_violation():
    result = check([w(0, "1", 0, 1), w(0, "2", 2, 3), r(1, "1", 4, 5)])
    assert not result.ok
    assert result.violations[0].stuck_at.f == "read"


def test_concurrent_read_may_see_old_or_new():
    assert check([w(0, "1", 0, 1), w(0, "2", 2, 6), r(1, "1", 3, 4)]).ok
    assert check([w(0, "1", 0, 1), w(0, "2", 2, 6), r(1, "2", 3, 4)]).ok


def test_reads_must_not_go_back_in_time():
    # Both reads overlap the write, but the first saw the new value: the second may not see the old one.
    assert not check([w(0, "1", 0, 1), w(0, "2", 2, 10), r(1, "2", 3, 4), r(2, "1", 5, 6)]).ok


def test_two_cas_from_the_same_etag_cannot_both_succeed():
    base = [w(0, "1", 0, 1)]
    both = base + [cas(1, "1", "a", 2, 5), cas(2, "1", "b", 2, 5)]
    assert not check(both).ok
    one_fails = base + [cas(1, "1", "a", 2, 5), cas(2, "1", "b", 2, 5, status="fail", current="a")]
    assert check(one_fails).ok


def test_lost_cas_is_a_violation():
    # A CAS was acknowledged, yet a later read sees the value it replaced.
    assert not check([w(0, "1", 0, 1), cas(1, "1", "2", 2, 3), r(2, "1", 4, 5)]).ok


def test_failed_cas_must_have_seen_another_value():
    # 412 although the register held exactly the expected value: a violation.
    assert not check([w(0, "1", 0, 1), cas(1, "1", "2", 2, 3, status="fail", current="1")]).ok
    # 412 reporting a value nobody wrote: a violation.
    assert not check([w(0, "1", 0, 1), cas(1, "0", "2", 2, 3, status="fail", current="9")]).ok
    # 412 reporting the real value: fine; and with an unreadable body, too.
    assert check([w(0, "1", 0, 1), cas(1, "0", "2", 2, 3, status="fail", current="1")]).ok
    assert check([w(0, "1", 0, 1), cas(1, "0", "2", 2, 3, status="fail", current=UNKNOWN)]).ok


def test_info_write_may_have_happened():
    # The write timed out, yet a later read sees it: it took effect.
    assert check([w(0, "1", 0, 1), w(1, "2", 2, None, status="info"), r(2, "2", 10, 11)]).ok


def test_info_write_may_not_have_happened():
    assert check([w(0, "1", 0, 1), w(1, "2", 2, None, status="info"), r(2, "1", 10, 11)]).ok


def test_info_write_cannot_take_effect_before_its_invoke():
    assert not check([w(0, "1", 0, 1), r(2, "2", 2, 3), w(1, "2", 5, None, status="info")]).ok


def test_info_write_cannot_flicker():
    # Once a read saw the unknown write's value, a later read cannot see the earlier value again.
    assert not check([w(0, "1", 0, 1), w(1, "2", 2, None, status="info"), r(2, "2", 3, 4), r(2, "1", 5, 6)]).ok


def test_info_cas_applies_only_if_its_precondition_held():
    assert check([w(0, "1", 0, 1), cas(1, "1", "2", 2, None, status="info"), r(2, "2", 5, 6)]).ok
    assert not check([w(0, "1", 0, 1), cas(1, "0", "2", 2, None, status="info"), r(2, "2", 5, 6)]).ok


def test_failed_writes_and_unknown_reads_are_ignored():
    assert check([w(0, "1", 0, 1), w(1, "2", 2, 3, status="fail"), r(2, "1", 4, 5),
                  Op(3, "k", "read", result="zzz", invoke=6, complete=None, status="info")]).ok


def test_lost_acknowledged_write_is_caught_by_a_final_read():
    history = [w(0, "1", 0, 1), w(1, "2", 2, 3)]
    assert check(history + [r(9, "2", 100, 101)]).ok
    assert not check(history + [r(9, "1", 100, 101)]).ok
    assert not check(history + [r(9, None, 100, 101)]).ok


def test_keys_are_checked_separately():
    ops = [w(0, "1", 0, 1, key="a"), w(0, "1", 0, 1, key="b"), r(1, "1", 2, 3, key="a"), r(1, None, 2, 3, key="b")]
    result = check(ops)
    assert not result.ok
    assert [v.key for v in result.violations] == ["b"]
    assert "key b" in result.describe()


def _simulated_register(seed, processes=5, ops_per_process=60):
    """A history made by a real (atomic) register under concurrency: linearizable by construction."""
    rng = random.Random(seed)
    state, clock, counter = None, 0.0, 0
    pending = {}
    history = []
    for _ in range(processes * ops_per_process * 2):
        clock += rng.random()
        p = rng.randrange(processes)
        if p not in pending:
            kind = rng.choice(["read", "write", "cas"])
            counter += 1
            pending[p] = (kind, str(counter), state, clock)
            continue
        kind, value, seen_at_invoke, invoked = pending.pop(p)
        # The op takes effect now, between its invoke and its completion.
        if kind == "read":
            history.append(r(p, state, invoked, clock + 0.1))
        elif kind == "write":
            state = value
            history.append(w(p, value, invoked, clock + 0.1))
        else:
            if state == seen_at_invoke:
                state = value
                history.append(cas(p, seen_at_invoke, value, invoked, clock + 0.1))
            else:
                history.append(cas(p, seen_at_invoke, value, invoked, clock + 0.1, status="fail", current=state))
    history.append(r(99, state, clock + 10, clock + 11))
    return history, state


@pytest.mark.parametrize("seed", range(5))
def test_random_atomic_register_histories_pass(seed):
    history, _ = _simulated_register(seed)
    assert check(history, timeout=60).ok


@pytest.mark.parametrize("seed", range(5))
def test_random_histories_with_a_lost_write_fail(seed):
    history, _ = _simulated_register(seed)
    writes = [op for op in history if op.f == "write"]
    # A write that completed before another write began can never be the last value.
    overwritten = next(a for a in writes if any(b.invoke > a.complete for b in writes))
    history[-1] = r(99, overwritten.value, history[-1].invoke, history[-1].complete)
    result = check(history, timeout=60)
    assert not result.ok
    assert result.violations[0].stuck_at is not None


def test_unobserved_unknown_writes_are_pruned_and_observed_ones_kept():
    history = [w(0, "1", 0, 1), w(1, "x", 2, None, status="info"), cas(2, "1", "y", 2, None, status="info"),
               w(3, "2", 3, None, status="info"), r(4, "2", 5, 6)]
    kept = prune_unobserved(history)
    assert [op.value for op in kept] == ["1", "2", None]
    # With a refused CAS of unknown current value nothing is pruned.
    unknown = history + [cas(5, "0", "z", 7, 8, status="fail", current=UNKNOWN)]
    assert prune_unobserved(unknown) == unknown


def test_many_unknown_outcomes_stay_fast():
    """A fault leaves dozens of writes with unknown outcomes; the check must stay quick."""
    history = [w(0, "0", 0, 1)]
    history += [w(p, f"lost{p}", 2 + p * 0.01, None, status="info") for p in range(1, 80)]
    history += [w(99, "after", 10, 11), r(99, "after", 12, 13)]
    result = check(history, timeout=2)
    assert result.ok, result.describe()
    history.append(r(98, "0", 14, 15))  # the acknowledged write "after" is lost
    result = check(history, timeout=2)
    assert not result.ok and not result.violations[0].timed_out


def test_a_search_past_its_state_limit_gives_up_as_a_failure():
    history, _ = _simulated_register(3)
    result = check_key("k", history, max_states=10)
    assert not result.ok and result.timed_out
