"""Unicode's Default_Ignorable_Code_Point: the code points renderers draw as nothing.

One table for everything that shows untrusted text: neutralising it for the model, its
visible form in a prompt, and the escaped form of errors and logs."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_IGNORABLE"]

#: Its ranges (DerivedCoreProperties.txt), hard-coded: unicodedata does not expose them.
DEFAULT_IGNORABLE: Final = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
