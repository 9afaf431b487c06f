"""Certificates made on the spot for local servers: a CA of their own and one certificate it signs for loopback.
The CA's key is never written, so nothing else can ever be signed with it; a new call makes a new CA."""

from __future__ import annotations

import datetime
import ipaddress
import secrets

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def loopback_certificate(common_name: str = "localhost", *, client: bool = False) -> dict[str, bytes]:
    """PEM files ``ca.pem``, ``server.pem`` and ``server.key``: a new CA, and a certificate for 127.0.0.1 and
    localhost named ``common_name`` that it signs, valid a year, for serving TLS (and presenting as a client of
    mutual TLS with ``client``)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"mfscore local CA {secrets.token_hex(4)}")])

    def signed(subject: x509.Name, public_key, extensions: list) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public_key)
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=365))
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                                  critical=False))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(ca_key, hashes.SHA256())

    usage = dict.fromkeys(("content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
                           "encipher_only", "decipher_only"), False)
    ca = signed(ca_name, ca_key.public_key(), [
        (x509.BasicConstraints(ca=True, path_length=0), True),
        (x509.KeyUsage(digital_signature=False, key_cert_sign=True, crl_sign=True, **usage), True)])
    purposes = [ExtendedKeyUsageOID.SERVER_AUTH, *([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])]
    server = signed(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]), key.public_key(), [
        (x509.BasicConstraints(ca=False, path_length=None), True),
        (x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False, **usage), True),
        (x509.ExtendedKeyUsage(purposes), False),
        (x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                      x509.DNSName("localhost")]), False)])
    pem = serialization.Encoding.PEM
    return {"ca.pem": ca.public_bytes(pem), "server.pem": server.public_bytes(pem),
            "server.key": key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())}
