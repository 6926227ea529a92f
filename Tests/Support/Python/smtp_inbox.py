"""A local mail sink for the suites that check Hearth's account emails (conformance, security)."""

import threading


class Inbox:
    """An aiosmtpd handler that keeps the messages it receives."""

    def __init__(self):
        self.messages = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        with self.arrived:
            self.messages.append(envelope)
            self.arrived.notify_all()
        return '250 OK'

    def wait(self, count, timeout=30):
        """The first `count` messages, once that many have arrived (fails after `timeout` seconds)."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.messages) >= count, timeout), \
                f'{len(self.messages)} of {count} emails arrived'
            return list(self.messages[:count])
