"""``zootriage.json``: what a ``torch.export`` program says about itself, as one typed record.

A program is only a graph and weights; how its input images are prepared and what its logits index
are not in it. ``torch.export.save(ep, path, extra_files={"zootriage.json": json.dumps({...})})`` adds::

    {"preprocess": {"channels": 1, "crop": [28, 28], "resize": null,
                    "mean": [0.1307], "std": [0.3081]},
     "label_space": "digits",
     "architecture": "MNISTNet",
     "name": "mnist-cnn v3"}

Every key is optional (``zootriage export`` writes them all). Unknown keys are ignored, so files from
newer versions still load. The worker's loader (``core.zoo.programs``) and the API's upload check
(``core.zoo.archive_check.program_extra``) read it through this one model.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zootriage.core.errors import BadCheckpoint
from zootriage.core.plain_text import PlainText
from zootriage.core.zoo.preprocess import Preprocess

METADATA_FILE = "zootriage.json"
LABEL_SPACE = r"^[A-Za-z0-9_.:\-]{1,64}$"


class ProgramMetadata(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    preprocess: Preprocess | None = None
    label_space: str | None = Field(default=None, pattern=LABEL_SPACE)
    # shown on pages and printed by the command line: no control character (``core.plain_text``)
    architecture: PlainText | None = Field(default=None, min_length=1, max_length=128)
    name: PlainText | None = Field(default=None, min_length=1, max_length=128)


def parse_metadata(raw: bytes | str | None, display_name: str) -> ProgramMetadata:
    """The program's ``zootriage.json`` (empty when absent); ``BadCheckpoint`` names what is wrong."""
    if not raw:
        return ProgramMetadata()
    try:
        return ProgramMetadata.model_validate(json.loads(raw))
    except ValueError as exc:
        if isinstance(exc, ValidationError):
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            raise BadCheckpoint(f"{display_name}: its {METADATA_FILE} is not usable ({problems})") from exc
        raise BadCheckpoint(f"{display_name}: its {METADATA_FILE} is not JSON") from exc
