"""Per-job SSH key pairs for ``plugin.ssh``.

Sits beside the pure core: it draws randomness, so it is kept out of ``aitj.core.render``, which
takes the key material as input (``render.render_ssh_secret``). The reconciler calls
``generate_keypair`` only when the cache shows a live ssh job without its Secret and without
pods of its own (``aitj.core.planner.resources.needs_ssh_keys``): once per job, also across
operator starts (Secrets are not watched, but a job with pods has its Secret), unless its
Secret is held by another (each retry of the create makes one). The Secret outlives operator
restarts.

Why RSA 3072 and not ed25519: the key is used by whatever OpenSSH (or Dropbear, or paramiko)
the user's image ships, which we do not control. An RSA key in traditional PEM
(``-----BEGIN RSA PRIVATE KEY-----``) is read by every OpenSSH release, by OpenSSH built in
FIPS mode (which refuses ed25519) and by old base images (ed25519 needs OpenSSH 6.5+, and
OpenSSH reads ed25519 private keys only in its own format). 3072 bits is NIST's floor for use
beyond 2030. The cost is generation time (tens to hundreds of milliseconds, once per job).
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

KEY_BITS = 3072


def generate_keypair(comment: str = "aitj") -> tuple[str, str]:
    """generate_keypair returns ``(private_pem, public_openssh)`` for a new RSA key.

    ``private_pem`` is an unencrypted PKCS#1 PEM (what ``ssh-keygen -m PEM`` writes);
    ``public_openssh`` is one ``authorized_keys`` line, ``ssh-rsa AAAA... <comment>``, without
    a trailing newline. The comment shows up in sshd's logs; it must not contain whitespace.
    """
    if any(ch.isspace() for ch in comment):
        raise ValueError(f"ssh key comment {comment!r} must not contain whitespace")
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private_pem = key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.TraditionalOpenSSL,
        encryption_algorithm=serialization.NoEncryption(),
    ).decode("ascii")
    public = (
        key.public_key()
        .public_bytes(
            encoding=serialization.Encoding.OpenSSH,
            format=serialization.PublicFormat.OpenSSH,
        )
        .decode("ascii")
    )
    return private_pem, f"{public} {comment}" if comment else public
