"""PowerContext 1.4.1's wire models for prepared context (``/v1/context/prepare``, ``/v1/context/bootstrap``) and
``/v1/server-info``, mirrored from its OpenAPI document (``tests/data/powercontext-1.4.1-memory.json``): same schema
names, fields, bounds and ``additionalProperties: false``. pcmem fills them from its own context blocks
(:mod:`pcmem.serve.context_ops`).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from pcmem.serve.wire import ArtifactReference, ScopeId

PreparedSchema = Literal["powercontext.prepared-context.v1"]
BootstrapSchema = Literal["powercontext.bootstrap-context.v1"]
BootstrapProfile = Literal["powercontext.scope-bootstrap.v1"]
PREPARED_CONTEXT_SCHEMA: PreparedSchema = "powercontext.prepared-context.v1"
BOOTSTRAP_CONTEXT_SCHEMA: BootstrapSchema = "powercontext.bootstrap-context.v1"
BOOTSTRAP_PROFILE: BootstrapProfile = "powercontext.scope-bootstrap.v1"
#: 1.4.1 lists at most this many items in a bootstrap package.
MAX_BOOTSTRAP_ITEMS = 7
#: 1.4.1's default ``runtime.context_assembly_max_entries``: the most entries an assembly's sections may ask for.
MAX_ASSEMBLY_ENTRIES = 8

Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
VisibleAscii = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[\x21-\x7E]+$")]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ContextAssemblyFamily(str, Enum):
    memory = "memory"
    experience = "experience"
    profile = "profile"
    topic_memory = "topic-memory"


class ContextAssemblySection(_Wire):
    family: ContextAssemblyFamily
    limit: StrictInt = Field(ge=1, le=8, description="Maximum included entries (pcmem: memory hits).")


class ContextAssembly(_Wire):
    """pcmem fills the memory sections (their limit is the number of search hits); it has no experience, profile or
    topic memory, so those sections stay empty."""

    format: Literal["markdown"] = "markdown"
    sections: list[ContextAssemblySection] = Field(
        default_factory=lambda: [ContextAssemblySection(family=ContextAssemblyFamily.memory, limit=6),
                                 ContextAssemblySection(family=ContextAssemblyFamily.experience, limit=2)],
        max_length=4)
    show: list[Literal["confidence", "recall_rank"]] = Field(default_factory=list, max_length=2)

    @model_validator(mode="after")
    def _policy(self) -> ContextAssembly:
        """1.4.1's rules: each family once, each label once, and the sections' limits within the server's entry
        budget (``runtime.context_assembly_max_entries``, 8 by default)."""
        families = [section.family for section in self.sections]
        if len(set(families)) != len(families) or len(set(self.show)) != len(self.show):
            raise ValueError("each section family and each show label may appear once")
        if sum(section.limit for section in self.sections) > MAX_ASSEMBLY_ENTRIES:
            raise ValueError(f"the sections' limits add up to more than {MAX_ASSEMBLY_ENTRIES} entries")
        return self


class PrepareContextRequest(_Wire):
    scope_id: ScopeId
    query: str = Field(min_length=1, max_length=8192, pattern=r".*\S.*")
    max_bytes: StrictInt = Field(default=8000, ge=512, le=32768)
    include_code: StrictBool = Field(default=False, description="pcmem has no code index: nothing is added.")
    explain: StrictBool = Field(default=False, description="Report a lost retrieval channel as `reason`.")
    assembly: ContextAssembly | None = None
    bootstrap_receipt_id: VisibleAscii | None = Field(
        default=None, description="pcmem keeps no bootstrap receipts: nothing is removed for it.")

    @model_validator(mode="before")
    @classmethod
    def _no_null_assembly(cls, value: Any) -> Any:
        if isinstance(value, dict) and "assembly" in value and value["assembly"] is None:
            raise ValueError("assembly must be omitted or contain an object")
        return value


class PreparedContext(_Wire):
    schema_: PreparedSchema = Field(default=PREPARED_CONTEXT_SCHEMA, alias="schema")
    status: Literal["ready", "empty"]
    content: str | None
    content_bytes: int = Field(ge=0)
    #: 1.4.1: absent unless asked for and a channel was lost, so an injected response keeps its four fields.
    reason: Literal["inference_timeout", "inference_unavailable"] | None = Field(
        default=None, exclude_if=lambda value: value is None)


class BootstrapContextRequest(_Wire):
    scope_id: ScopeId
    enabled: StrictBool = False
    profile: BootstrapProfile = BOOTSTRAP_PROFILE
    lifecycle: Literal["startup", "resume", "clear", "compact", "restore", "fork"]
    integration: VisibleAscii
    event_id: str | None = Field(default=None, min_length=1, max_length=512, pattern=r"^[\x20-\x7E]+$")
    max_bytes: StrictInt = Field(default=4096, ge=512, le=8192)
    handoff: ArtifactReference | None = Field(default=None, description="pcmem has no Handoffs: 404 when given.")


class BootstrapContextItem(_Wire):
    kind: Literal["atomic-memory", "handoff"]
    scope_id: str
    artifact: ArtifactReference
    content_digest: Digest
    truncated: bool


class BootstrapDeliveryReceipt(_Wire):
    receipt_id: VisibleAscii
    state: Literal["pending", "injected", "skipped", "failed"]


class BootstrapContext(_Wire):
    schema_: BootstrapSchema = Field(default=BOOTSTRAP_CONTEXT_SCHEMA, alias="schema")
    status: Literal["ready", "empty", "skipped"]
    reason: Literal["disabled", "no_eligible_context", "already_delivered", "preparation_failed"] | None
    profile: BootstrapProfile = BOOTSTRAP_PROFILE
    content: str | None
    content_bytes: int = Field(ge=0)
    package_digest: Digest | None
    items: list[BootstrapContextItem] = Field(max_length=MAX_BOOTSTRAP_ITEMS)
    truncated: bool
    receipt: BootstrapDeliveryReceipt


class ContractVersion(BaseModel):
    major: int = Field(ge=1)
    minor: int = Field(ge=0)


class FeatureContract(BaseModel):
    version: ContractVersion
    operations: list[str] = Field(min_length=1)


class ServerInfo(BaseModel):
    """Stable deployment identity and protocol compatibility metadata (PowerContext 1.4.1's shape)."""

    schema_version: ContractVersion
    product: Literal["powercontext"]
    server_id: str = Field(min_length=1, max_length=128)
    package_version: str = Field(min_length=1)
    api_contract_version: ContractVersion
    feature_contracts: dict[str, FeatureContract]
