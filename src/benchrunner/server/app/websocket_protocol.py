"""The server's WebSocket protocol: uvicorn's websockets (sans-I/O) implementation, whose close
frame reaches the client when the server fails a connection on a frame it refuses.

uvicorn refuses a frame as soon as its header is read: over ``--request-body-max-bytes`` (1009)
or, once whole, a text message that is not UTF-8 (1007). It then writes the close frame and closes
the socket at once, while the rest of the frame is still arriving or waiting unread. A socket
closed with unread data answers with a reset, and a reset can overtake the close frame: the
client sees an abrupt end (1006) instead of the code. A runner shrinks a result that got 1009 but
resends one whose connection merely ended, so the code must arrive.

Here the server writes the close frame, ends its side of the connection (FIN), and reads on,
discarding, until the client closes its side; at most ``close_timeout`` seconds.

The text messages an application sends in one turn of the event loop go out in one write. A
socket's write is most of what answering a message costs (benchmarks/RESULTS.md,
``job_upkeep``), and the messages a runner sends in one burst are read together and answered in
the same turn: one write answers them all. The frames, and their order before any other frame
(a close, a pong), stay as they were; each merely waits for the end of the turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState

if TYPE_CHECKING:
    from uvicorn._types import ASGISendEvent


class LingeringCloseProtocol(WebSocketsSansIOProtocol):
    """``uvicorn.Config(ws=LingeringCloseProtocol)``."""

    _failed = False
    _flush_due = False
    """Whether a write of the frames sent this turn is scheduled (``_flush``)."""

    async def send(self, message: ASGISendEvent) -> None:
        text = message.get("text") if message["type"] == "websocket.send" else None
        if (
            not isinstance(text, str)
            or not self.handshake_complete
            or self.close_sent
            or self.disconnected
            or not self.writable.is_set()
        ):
            await super().send(message)  # uvicorn's own way, and its checks and errors
            return
        try:
            self.conn.send_text(text.encode())
        except InvalidState:
            raise ClientDisconnected() from None
        if not self._flush_due:
            self._flush_due = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write the frames sent this turn. Whatever writes a frame of its own first (a close,
        a pong) takes them with it, ahead of its own: ``data_to_send`` keeps their order."""
        self._flush_due = False
        output = self.conn.data_to_send()
        if output and not self.transport.is_closing():
            self.transport.write(b"".join(output))

    def data_received(self, data: bytes) -> None:
        if self._failed:
            return  # the rest of the refused frame, or the client's reply to the close
        super().data_received(data)

    def handle_parser_exception(self) -> None:
        if self._failed:
            return
        self._failed = True
        close = self.conn.close_sent
        code, reason = (close.code, close.reason) if close is not None else (1006, "")
        self.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        if not self.transport.can_write_eof():  # TLS: no half-close
            self.transport.close()
            return
        self.transport.write_eof()
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()
        # The client's EOF closes the transport (``eof_received`` returns None); this bounds a
        # client that never closes.
        self.close_timer = self.loop.call_later(self.close_timeout, self.transport.close)
