"""An internal ACME certificate authority for tests: Let's Encrypt's Pebble (Debian's
``pebble``), as tests/system/test_guides.py runs it in a systemd machine beside Caddy.

Debian's package holds the program alone, so the test makes what Pebble's own HTTPS listener
presents: a CA of its own (``Listener.ca``), which the ACME client must trust, and a certificate
it signed for ``127.0.0.1``. The certificates Pebble issues chain to another root, which Pebble
makes at start and serves on its management port (``/roots/0``)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ACME_PORT = 14000
MANAGEMENT_PORT = 15000
DIRECTORY = f"https://127.0.0.1:{ACME_PORT}/dir"
ROOTS = f"https://127.0.0.1:{MANAGEMENT_PORT}/roots/0"


@dataclass
class Listener:
    """PEM files: the CA, and the listener's certificate and key."""

    ca: bytes
    certificate: bytes
    key: bytes


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def listener() -> Listener:
    """A CA and a certificate it signed for ``127.0.0.1``, valid for a day."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("benchrunner tests' ACME listener CA"))
        .issuer_name(_name("benchrunner tests' ACME listener CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return Listener(
        ca=ca.public_bytes(pem),
        certificate=certificate.public_bytes(pem),
        key=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def config(certificate: str, key: str) -> bytes:
    """Pebble's configuration: its ports on loopback, and challenges validated on the standard
    ports 80 (HTTP-01) and 443 (TLS-ALPN-01), where the ACME client answers them."""
    body = {
        "pebble": {
            "listenAddress": f"127.0.0.1:{ACME_PORT}",
            "managementListenAddress": f"127.0.0.1:{MANAGEMENT_PORT}",
            "certificate": certificate,
            "privateKey": key,
            "httpPort": 80,
            "tlsPort": 443,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": False,
        }
    }
    return json.dumps(body, indent=2).encode()


ENVIRONMENT = {"PEBBLE_VA_NOSLEEP": "1", "PEBBLE_WFE_NONCEREJECT": "0"}
"""No random wait before each validation, and no nonce refused at random (Pebble's defaults,
which exercise a client's retries, not what the test is about)."""
