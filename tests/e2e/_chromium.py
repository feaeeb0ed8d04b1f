"""Headless Chromium (Debian's ``chromium``) for looking at a page the way a person would, and a small PNG
reader for its screenshots (8-bit RGB/RGBA, not interlaced — what Chromium writes)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)


def chromium_or_skip() -> str:
    """The chromium binary; outside CI a missing one skips with the reason, under CI it fails (.ci/run installs it)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    message = "Debian's chromium is not installed (apt-get install -y chromium; .ci/run installs it when missing)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _run(args: list[str], profile: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    binary = chromium_or_skip()
    done = subprocess.run(
        [binary, *_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return done


def screenshot(page: Path, out: Path, profile: Path, size: tuple[int, int]) -> Path:
    done = _run([f"--window-size={size[0]},{size[1]}", f"--screenshot={out}", page.as_uri()], profile)
    if done.returncode != 0 or not out.is_file():
        message = f"chromium could not take a screenshot (exit {done.returncode}): {done.stderr[-600:]}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return out


def dump_dom(page: Path, profile: Path) -> str:
    done = _run(["--dump-dom", page.as_uri()], profile)
    if done.returncode != 0 or "<html" not in done.stdout:
        message = f"chromium could not load the page (exit {done.returncode}): {done.stderr[-600:]}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return done.stdout


@dataclass
class Image:
    width: int
    height: int
    channels: int
    rows: list[bytes]

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        row, at = self.rows[y], x * self.channels
        return row[at], row[at + 1], row[at + 2]


def read_png(path: Path, max_rows: int | None = None) -> Image:
    """Decode ``path`` (only its first ``max_rows`` rows, when given: pure Python is slow)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG: depth {depth}, colour type {colour}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(min(height, max_rows or height)):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return Image(width, len(rows), channels, rows)


def hex_rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)
