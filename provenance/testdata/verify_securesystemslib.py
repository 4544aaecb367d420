#!/usr/bin/env python3
"""Check a run's statement with Python's securesystemslib, not with our Go.

usage: verify_securesystemslib.py ENVELOPE PUBLIC_KEY_PEM

ENVELOPE is what `metaharness run --statement` wrote: a DSSE envelope, one
JSON object, whose payload is an in-toto Statement v1. PUBLIC_KEY_PEM is the
signer's public key ("PUBLIC KEY" PEM), ed25519 or ECDSA P-256.

securesystemslib loads the key, computes its key id and checks the
signature. Version 0.26 (Debian bookworm's python3-securesystemslib) has no
DSSE module, so the bytes a DSSE signature covers, the pre-authentication
encoding, are built here from the DSSE protocol:

    "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

with each LEN the byte count in ASCII decimal. The `cryptography` package,
which securesystemslib itself verifies ECDSA with, reads the PEM to tell the
key's algorithm and, for ed25519, its raw 32 bytes (securesystemslib 0.26
imports no ed25519 PEM).

Prints one line, and exits 0 when a signature carries the key id
securesystemslib computes for the key and verifies over the envelope's
payload; 1 when none does; 2 when the input cannot be read.
"""

import base64
import json
import sys

import securesystemslib
from securesystemslib import exceptions, keys
from securesystemslib.signer import Signature, SSlibKey
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"


def pre_authentication_encoding(payload_type: str, body: bytes) -> bytes:
    kind = payload_type.encode("utf-8")
    return b"".join(
        [b"DSSEv1 ", str(len(kind)).encode(), b" ", kind, b" ", str(len(body)).encode(), b" ", body]
    )


def sslib_key(pem: str) -> dict:
    """The public key as securesystemslib's key dictionary, key id included."""
    public = serialization.load_pem_public_key(pem.encode("ascii"))
    if isinstance(public, ec.EllipticCurvePublicKey):
        if not isinstance(public.curve, ec.SECP256R1):
            raise ValueError(f"an ECDSA key on {public.curve.name}, not P-256")
        return keys.import_ecdsakey_from_public_pem(pem)
    if isinstance(public, ed25519.Ed25519PublicKey):
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        metadata = {"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": raw.hex()}}
        key, _ = keys.format_metadata_to_key(metadata)
        return key
    raise ValueError(f"a {type(public).__name__}, neither ed25519 nor ECDSA P-256")


def main(argv: list) -> int:
    if len(argv) != 3:
        print("usage: verify_securesystemslib.py ENVELOPE PUBLIC_KEY_PEM", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            envelope = json.load(f)
        body = base64.b64decode(envelope["payload"], validate=True)
        statement = json.loads(body)
        with open(argv[2], encoding="ascii") as f:
            key = sslib_key(f.read())
    except (OSError, ValueError, KeyError, TypeError, exceptions.Error) as err:
        print(f"unreadable: {err}", file=sys.stderr)
        return 2
    if statement.get("_type") != STATEMENT_TYPE:
        print(f"unreadable: the payload is not an in-toto Statement v1 ({statement.get('_type')!r})", file=sys.stderr)
        return 2

    verifier = SSlibKey.from_securesystemslib_key(key)
    signed = pre_authentication_encoding(envelope["payloadType"], body)
    ids = []
    for sig in envelope.get("signatures") or []:
        ids.append(sig.get("keyid", ""))
        if sig.get("keyid") != key["keyid"]:
            continue
        try:
            raw = base64.b64decode(sig["sig"], validate=True)
            verifier.verify_signature(Signature(key["keyid"], raw.hex()), signed)
        except (ValueError, KeyError, exceptions.UnverifiedSignatureError) as err:
            print(f"securesystemslib {securesystemslib.__version__}: signature rejected: {key['scheme']} key {key['keyid']}: {type(err).__name__}")
            return 1
        print(
            f"securesystemslib {securesystemslib.__version__}: signature ok: {key['scheme']} key {key['keyid']}, "
            f"predicate {statement.get('predicateType')}, {len(statement.get('subject') or [])} subjects"
        )
        return 0
    print(f"securesystemslib {securesystemslib.__version__}: no signature by {key['scheme']} key {key['keyid']} (the envelope names {ids})")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
