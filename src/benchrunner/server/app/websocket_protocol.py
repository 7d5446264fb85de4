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
"""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class LingeringCloseProtocol(WebSocketsSansIOProtocol):
    """``uvicorn.Config(ws=LingeringCloseProtocol)``."""

    _failed = False

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
