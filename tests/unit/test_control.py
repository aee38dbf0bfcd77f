from zerotui.core.train.control import ControlState


def test_stop_wakes_a_paused_loop():
    c = ControlState()
    assert not c.paused
    c.pause()
    assert c.paused
    c.request_stop("user asked")
    assert c.stopping and not c.paused and c.reason == "user asked"
    assert not c.stop_now.is_set()


def test_stop_now_is_separate_from_graceful_stop():
    c = ControlState()
    c.request_stop("kill", now=True)
    assert c.stop_now.is_set() and not c.stop.is_set()
