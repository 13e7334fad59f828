"""Images for read: recognised by their bytes, sent as they are or made small enough."""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass

from heron.agent.tools import ToolError

IMAGE_MAX_DIMENSION = 2000
IMAGE_MAX_BASE64_BYTES = 4_500_000  # providers cap an image near 5 MB of base64
IMAGE_MAX_FILE_BYTES = 64 * 1024 * 1024  # larger files are not loaded to be downscaled

_IMAGE_MIME = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


def image_mime(head: bytes) -> str | None:
    """MIME type from magic bytes; extensions lie (and screenshots often have none)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return _IMAGE_MIME["png"]
    if head.startswith(b"\xff\xd8\xff"):
        return _IMAGE_MIME["jpeg"]
    if head.startswith((b"GIF87a", b"GIF89a")):
        return _IMAGE_MIME["gif"]
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _IMAGE_MIME["webp"]
    return None


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """An image made ready to send: resized or re-encoded when needed, with the original size
    kept so the model can be told how the image was changed."""

    data: str  # base64
    mime_type: str
    width: int
    height: int
    original_width: int
    original_height: int
    encoded_bytes: int
    changed: bool


def _b64_len(n: int) -> int:
    return 4 * math.ceil(n / 3)


def prepare_image(data: bytes, mime: str, max_dimension: int, max_base64: int) -> PreparedImage:
    """The image as the model gets it: within ``max_dimension`` on both sides and
    ``max_base64`` bytes once base64-encoded, sent untouched when it already fits."""
    from PIL import Image  # imported here: Pillow costs ~50 ms and most reads are text

    try:
        img = Image.open(io.BytesIO(data))
        width, height = img.size
        if width <= max_dimension and height <= max_dimension and _b64_len(len(data)) <= max_base64:
            img.verify()
            return PreparedImage(
                base64.b64encode(data).decode("ascii"), mime, width, height, width, height, len(data), False
            )
        img = Image.open(io.BytesIO(data))
        img.seek(0)
        img.load()
    except Exception as exc:  # Pillow raises many types for a bad file
        raise ToolError(f"The file looks like {mime} but could not be decoded: {exc}") from exc

    has_alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    frame = img.convert("RGBA" if has_alpha else "RGB")
    scale = min(1.0, max_dimension / width, max_dimension / height)
    formats = ["PNG", "JPEG"] if has_alpha or mime in ("image/png", "image/gif") else ["JPEG", "PNG"]
    while True:
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        candidate = frame if size == frame.size else frame.resize(size, Image.Resampling.LANCZOS)
        for fmt in formats:
            for quality in (85, 70, 55, 40) if fmt == "JPEG" else (0,):
                out = io.BytesIO()
                if fmt == "JPEG":
                    flat = candidate
                    if candidate.mode == "RGBA":
                        flat = Image.new("RGB", candidate.size, (255, 255, 255))
                        flat.paste(candidate, mask=candidate.getchannel("A"))
                    flat.save(out, "JPEG", quality=quality, optimize=True)
                else:
                    candidate.save(out, "PNG")
                encoded = out.getvalue()
                if _b64_len(len(encoded)) <= max_base64:
                    return PreparedImage(
                        base64.b64encode(encoded).decode("ascii"),
                        "image/jpeg" if fmt == "JPEG" else "image/png",
                        size[0],
                        size[1],
                        width,
                        height,
                        len(encoded),
                        True,
                    )
        if size[0] <= 16 or size[1] <= 16:
            raise ToolError(f"The image could not be made small enough to send ({width}x{height}).")
        scale *= 0.75
