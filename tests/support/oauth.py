"""A test OAuth issuer: RSA keys made here, their JWKS served by the loopback emulator, tokens signed
by the test (PyJWT over cryptography — both already dependencies of the mcp SDK).

    idp = TestIssuer(emulator)                     # serves {kid: k1} at idp.jwks_uri
    token = idp.token(tenant="acme", project="review", scope="zarniwoop:user")
    idp.rotate("k2")                               # the JWKS now holds k2 only
    idp.fetches()                                  # how often the JWKS was fetched
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from .emulator import Emulator, RecordedRequest, Reply

ISSUER = "https://idp.test"
RESOURCE = "https://zarniwoop.test"
JWKS_PATH = "/idp/jwks.json"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TestIssuer:
    __test__ = False  # not a pytest class

    def __init__(self, emulator: Emulator, kid: str = "k1") -> None:
        self.emulator = emulator
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self.published: list[str] = []
        self.rotate(kid)
        emulator.add(JWKS_PATH, self._jwks)

    @property
    def jwks_uri(self) -> str:
        return f"{self.emulator.url}{JWKS_PATH}"

    def config(self, **issuer: Any) -> dict[str, Any]:
        """The `auth:` block of a config file trusting this issuer."""
        return {
            "mode": "oauth",
            "resource": RESOURCE,
            "jwksRefetchSeconds": 0,
            "issuers": [{"issuer": ISSUER, "jwksUri": self.jwks_uri, **issuer}],
        }

    def rotate(self, kid: str) -> None:
        """A new key `kid`; the JWKS publishes it alone (the old keys still sign, for forged tokens)."""
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.published = [kid]

    def fetches(self) -> int:
        return len(self.emulator.requests(JWKS_PATH))

    def _jwks(self, request: RecordedRequest) -> Reply:
        keys = []
        for kid in self.published:
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
            keys.append({**jwk, "kid": kid, "alg": "RS256", "use": "sig"})
        return Reply.json({"keys": keys})

    def claims(self, **claims: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {"iss": ISSUER, "aud": RESOURCE, "sub": "user-1", "iat": now, "nbf": now, "exp": now + 300}
        return {**base, **claims}

    def token(self, *, kid: str | None = None, **claims: Any) -> str:
        kid = kid or self.published[0]
        return jwt.encode(self.claims(**claims), self.keys[kid], algorithm="RS256", headers={"kid": kid})

    def unsigned(self, **claims: Any) -> str:
        """`alg: none`: a token with no signature at all."""
        header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
        return f"{header}.{_b64(json.dumps(self.claims(**claims)).encode())}."

    def tampered(self, token: str, **claims: Any) -> str:
        """`token`'s header and signature around other claims (an escalation attempt)."""
        header, _, signature = token.split(".")
        return f"{header}.{_b64(json.dumps(self.claims(**claims)).encode())}.{signature}"


__all__ = ["ISSUER", "JWKS_PATH", "RESOURCE", "TestIssuer"]
