"""The JSON bodies of the ``/v0`` API, one model per body, shared by the server (which validates
requests with them), the client (which builds requests and parses answers with them) and the
CLI (which reads the answers' typed fields). The channel's messages are ``protocol``'s.

Request models (``base.ApiBody``) refuse text the stores cannot keep; those that refuse unknown
fields say ``extra="forbid"``. Answer models (``base.Answer``) keep fields they do not name (a
server sends them after the named ones), so a client reads a newer server's answers.
"""
