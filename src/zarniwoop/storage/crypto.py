"""Secrets at rest: AES-256-GCM with a master key that never enters the database.

The master key comes from `ZARNIWOOP_MASTER_KEY` (base64 of 32 bytes, or any passphrase, which
is stretched with SHA-256), else from `ZARNIWOOP_HOME/master.key`, created on first use with
mode 0600. Every sealed value carries a fresh 96-bit nonce and is bound to its purpose by the
associated data (`aad`), so a ciphertext copied to another row does not decrypt.

    box = SecretBox.load(home)
    token = box.seal("sk-live-…", aad=b"setting:acme/_tenant/research.endpoint.serper.apiKey")
    box.open(token, aad=...)  # "sk-live-…"
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from ..contract.errors import ConfigError
from .private import open_private, private_dir

PREFIX = "v1:"
KEY_FILE = "master.key"


class SecretBox:
    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if len(key) != 32:
            raise ConfigError("ZARNIWOOP_MASTER_KEY", "must decode to 32 bytes")
        self._aead = AESGCM(key)
        self.fingerprint = hashlib.sha256(b"zarniwoop-fp" + key).hexdigest()[:12]
        self._signing = hmac.new(key, b"zarniwoop-signing-key", hashlib.sha256).digest()

    def sign(self, purpose: str, message: str) -> str:
        """A 128-bit MAC of `message` for one `purpose` (the image proxy's URLs, page cursors), under a
        key derived from the master key: every replica sharing the master key signs alike. Keyed
        BLAKE2b (RFC 7693), a MAC by design: a third of HMAC-SHA256's instructions (11k against 33k,
        OpenSSL's per-call HMAC set-up), signed on every search that offers a next page."""
        mac = hashlib.blake2b(f"{purpose}\n{message}".encode(), key=self._signing, digest_size=16)
        return mac.hexdigest()

    def verify(self, purpose: str, message: str, signature: str) -> bool:
        """Whether `signature` is `sign(purpose, message)`, compared as bytes in constant time: any
        malformed signature (non-ASCII, a lone surrogate, the wrong length) is simply not it."""
        return equal_secrets(self.sign(purpose, message), signature)

    @classmethod
    def load(cls, home: Path) -> SecretBox:
        env = os.environ.get("ZARNIWOOP_MASTER_KEY")
        if env:
            return cls(_decode_key(env))
        path = home / KEY_FILE
        if not path.exists():
            private_dir(home)
            fd = open_private(path, os.O_WRONLY | os.O_EXCL)
            with os.fdopen(fd, "w") as handle:
                handle.write(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            raise ConfigError(
                str(path), f"master key file must not be readable by others (mode {mode:o}, want 600)"
            )
        return cls(_decode_key(path.read_text().strip()))

    def seal(self, plaintext: str | bytes, *, aad: bytes) -> str:
        data = plaintext.encode() if isinstance(plaintext, str) else plaintext
        nonce = secrets.token_bytes(12)
        return PREFIX + base64.urlsafe_b64encode(nonce + self._aead.encrypt(nonce, data, aad)).decode()

    def open_bytes(self, token: str, *, aad: bytes) -> bytes:
        from cryptography.exceptions import InvalidTag

        if not token.startswith(PREFIX):
            raise ConfigError("secret", "not a sealed value")
        try:
            raw = base64.urlsafe_b64decode(token[len(PREFIX) :])
            return self._aead.decrypt(raw[:12], raw[12:], aad)
        except (InvalidTag, binascii.Error, ValueError) as exc:
            raise ConfigError(
                "ZARNIWOOP_MASTER_KEY", "a stored secret does not decrypt: wrong master key or tampered value"
            ) from exc

    def open(self, token: str, *, aad: bytes) -> str:
        return self.open_bytes(token, aad=aad).decode()


def equal_secrets(expected: str, given: str) -> bool:
    """A constant-time comparison of two secrets as UTF-8 bytes. `hmac.compare_digest` raises
    `TypeError` on a `str` holding anything but ASCII, which a caller's input may; bytes never do."""
    return hmac.compare_digest(_utf8(expected), _utf8(given))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _decode_key(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if len(raw) == 32:
            return raw
    except (binascii.Error, ValueError):
        pass
    return hashlib.sha256(text.encode()).digest()
