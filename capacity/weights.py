"""Weight sizes: parameters per part of a model and the bytes vLLM loads for them.

Owns counting parameters from a config (embeddings, each decoder layer's attention, dense MLP and
routed experts, LM head, vision tower), reading the bytes per parameter of a checkpoint from its
``quantization_config`` (fp8, compressed-tensors, GPTQ, AWQ, bitsandbytes, ModelOpt, MXFP4) and
applying run-time ``dtype`` / ``quantization`` overrides. When the checkpoint size is known (Hub
safetensors size or per-dtype counts) the config-derived split is rescaled to it, so the totals
are the real ones and only the split between parts is derived.
"""

from __future__ import annotations

from dataclasses import dataclass

from capacity.errors import CapacityError
from capacity.model_facts import ModelFacts

DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}
SAFETENSORS_DTYPE_BYTES = {
    "F64": 8,
    "I64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "BF16": 2,
    "F16": 2,
    "I16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}
# Run-time methods that quantize a 16-bit checkpoint while loading it.
ONLINE_METHODS = {"fp8": 1.0, "fbgemm_fp8": 1.0, "bitsandbytes": 0.5 + 4 / 64}
# Methods that need a checkpoint already quantized with that method (names as vLLM's --quantization).
CHECKPOINT_METHODS = (
    "gptq",
    "awq",
    "compressed-tensors",
    "modelopt",
    "modelopt_fp4",
    "mxfp4",
    "fp8",
    "bitsandbytes",
)
# Marlin kernels and other aliases select the same checkpoint format.
METHOD_ALIASES = {"gptq_marlin": "gptq", "gptq_marlin_24": "gptq", "awq_marlin": "awq", "fbgemm_fp8": "fp8"}
# Model families with a plain two-matrix MLP (no gate projection).
UNGATED_MLP = ("phi", "gpt2", "gpt_bigcode", "gpt_neox", "opt", "falcon", "bloom", "starcoder2")
# Families with biases on q/k/v.
QKV_BIAS = ("qwen2", "qwen2_moe", "qwen2_vl", "phi")
# Families with RMS norms on q and k (one head_dim vector each) and with four norms per layer.
QK_NORM = ("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "llama4_text")
FOUR_NORMS = ("gemma2", "gemma3", "gemma3_text")


@dataclass(frozen=True)
class ParameterCounts:
    """Parameters per part, counted from the config."""

    embedding: int
    lm_head: int
    layer_dense: tuple[int, ...]
    """Per decoder layer: quantizable linear weights except routed experts (attention, dense/shared MLP)."""
    layer_experts: tuple[int, ...]
    """Per decoder layer: routed-expert weights (0 for dense layers)."""
    layer_other: tuple[int, ...]
    """Per decoder layer: norms, biases, router: kept in the activation dtype."""
    vision: int
    final_norm: int

    @property
    def total(self) -> int:
        plain = self.embedding + self.lm_head + self.vision + self.final_norm
        return plain + sum(self.layer_dense + self.layer_experts + self.layer_other)


@dataclass(frozen=True)
class WeightBytes:
    """Bytes vLLM holds per part of the model (whole model, before any parallel split)."""

    embedding: int
    lm_head: int
    layer_dense: tuple[int, ...]
    layer_experts: tuple[int, ...]
    vision: int

    @property
    def total(self) -> int:
        return self.embedding + self.lm_head + self.vision + sum(self.layer_dense) + sum(self.layer_experts)


def _attention_params(facts: ModelFacts) -> tuple[int, int]:
    """(linear weights, biases) of one attention block."""
    h, heads = facts.hidden_size, facts.num_attention_heads
    if facts.is_mla:
        t = facts.text_config
        nope, rope = int(t.get("qk_nope_head_dim", 0)), int(t.get("qk_rope_head_dim", 0))
        v_dim, kv_rank, q_rank = int(t.get("v_head_dim", nope)), int(t["kv_lora_rank"]), t.get("q_lora_rank")
        q = h * q_rank + q_rank * heads * (nope + rope) if q_rank else h * heads * (nope + rope)
        linear = q + h * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * h
        return linear, kv_rank + (int(q_rank) if q_rank else 0)
    hd, kv = facts.head_dim, facts.num_kv_heads
    linear = h * hd * (heads + 2 * kv) + heads * hd * h
    bias = (
        hd * (heads + 2 * kv)
        if facts.model_type in QKV_BIAS or facts.text_config.get("attention_bias")
        else 0
    )
    return linear, bias


def _mlp_params(facts: ModelFacts, width: int) -> int:
    matrices = 2 if facts.model_type in UNGATED_MLP else 3
    return matrices * facts.hidden_size * width


def _vision_params(facts: ModelFacts) -> int:
    """Rough size of a vision tower and projector (only used when the checkpoint size is unknown)."""
    vision = facts.config.get("vision_config")
    if not isinstance(vision, dict):
        return 0
    h = int(vision.get("hidden_size") or vision.get("vt_hidden_size") or 0)
    inter = int(vision.get("intermediate_size") or vision.get("vt_intermediate_size") or 4 * h)
    layers = int(
        vision.get("num_hidden_layers") or vision.get("depth") or vision.get("vt_num_hidden_layers") or 0
    )
    return layers * (4 * h * h + 2 * h * inter) + h * facts.hidden_size


def count_parameters(facts: ModelFacts) -> ParameterCounts:
    """Parameters of every part, from the config alone."""
    h, vocab = facts.hidden_size, facts.vocab_size
    attention, attention_bias = _attention_params(facts)
    dense, experts, other = [], [], []
    qk_norm = 2 * facts.head_dim if facts.model_type in QK_NORM or facts.text_config.get("use_qk_norm") else 0
    # Plain two-matrix MLP families carry biases on the output projection and both MLP matrices.
    biased = facts.model_type in UNGATED_MLP or bool(facts.text_config.get("mlp_bias"))
    mlp_bias = facts.intermediate_size + 2 * h if biased else 0
    # Qwen2-MoE gates its shared expert with one more hidden-size vector.
    shared_gate = h if facts.text_config.get("shared_expert_intermediate_size") else 0
    for i in range(facts.num_layers):
        norms = (4 if facts.model_type in FOUR_NORMS else 2) * h + attention_bias + qk_norm
        if facts.is_moe_layer(i):
            shared = facts.shared_expert_intermediate_size
            dense.append(attention + (_mlp_params(facts, shared) if shared else 0))
            experts.append(facts.num_experts * _mlp_params(facts, facts.moe_intermediate_size))
            other.append(norms + h * facts.num_experts + shared_gate)
        else:
            dense.append(attention + _mlp_params(facts, facts.intermediate_size))
            experts.append(0)
            other.append(norms + mlp_bias)
    lm_head = 0 if facts.tie_word_embeddings else vocab * h + (vocab if biased else 0)
    return ParameterCounts(
        embedding=vocab * h,
        lm_head=lm_head,
        layer_dense=tuple(dense),
        layer_experts=tuple(experts),
        layer_other=tuple(other),
        vision=_vision_params(facts),
        final_norm=2 * h if biased else h,
    )


# ---------------------------------------------------------------------- bytes per parameter


def normalize_method(method: str | None) -> str | None:
    """vLLM quantization name -> checkpoint format (``gptq_marlin`` -> ``gptq``)."""
    if method is None:
        return None
    name = method.strip().lower().replace("compressed_tensors", "compressed-tensors")
    return METHOD_ALIASES.get(name, name)


def _group_overhead(bits: float, group_size: int | None) -> float:
    """Scale (fp16) and packed zero point per group, in bytes per weight."""
    if not group_size or group_size <= 0:
        return 0.0
    return (2 + bits / 8) / group_size


def checkpoint_linear_bytes(quant: dict) -> tuple[float, float]:
    """(bytes per dense linear weight, bytes per routed-expert weight) of a quantized checkpoint."""
    method = normalize_method(str(quant.get("quant_method", "")))
    if method == "fp8":
        return 1.0, 1.0
    if method in ("gptq", "awq"):
        bits = int(quant.get("bits") or quant.get("w_bit") or 4)
        group = quant.get("group_size") or quant.get("q_group_size")
        value = bits / 8 + _group_overhead(bits, group)
        return value, value
    if method == "compressed-tensors":
        weights = next(iter((quant.get("config_groups") or {}).values()), {}).get("weights") or {}
        bits = int(weights.get("num_bits") or 8)
        value = bits / 8 + _group_overhead(bits, weights.get("group_size"))
        return value, value
    if method == "mxfp4":  # MXFP4 experts (4-bit + one E8M0 scale per 32), attention kept in 16-bit
        return 2.0, 0.5 + 1 / 32
    if method in ("modelopt", "modelopt-fp4", "modelopt_fp4"):
        algo = str(quant.get("quant_algo") or quant.get("quantization", {}).get("quant_algo", "FP8")).upper()
        value = 0.5 + 1 / 16 if "FP4" in algo else 1.0
        return value, value
    if method == "bitsandbytes":
        value = 0.5 + 4 / 64 if quant.get("load_in_4bit", True) else 1.0
        return value, value
    raise CapacityError(f"quantization method {method!r} of the checkpoint is not known to the planner")


def _resolve_dtype(facts: ModelFacts, dtype: str) -> int:
    name = dtype.strip().lower()
    if name == "auto":
        # vLLM keeps the checkpoint dtype, except that float32 checkpoints are served in bfloat16.
        return 2 if DTYPE_BYTES.get(facts.torch_dtype, 2) == 4 else DTYPE_BYTES.get(facts.torch_dtype, 2)
    if name not in DTYPE_BYTES:
        raise CapacityError(f"dtype {dtype!r} is not supported; use auto, bfloat16, float16 or float32")
    return DTYPE_BYTES[name]


def activation_bytes(facts: ModelFacts, dtype: str = "auto") -> int:
    """Bytes per activation element (the model dtype vLLM runs in)."""
    return _resolve_dtype(facts, dtype)


def _known_checkpoint_bytes(facts: ModelFacts, bits: float) -> int | None:
    if facts.safetensors_total_size_bytes:
        return facts.safetensors_total_size_bytes
    if facts.safetensors_parameters:
        total = 0.0
        for name, count in facts.safetensors_parameters.items():
            # The Hub counts packed int32 (GPTQ/AWQ) tensors as the weights they hold.
            per = bits / 8 if name.upper() == "I32" else SAFETENSORS_DTYPE_BYTES.get(name.upper(), 2)
            total += count * per
        return int(total)
    return None


def _quantized_by_counts(facts: ModelFacts) -> bool:
    names = {n.upper() for n in facts.safetensors_parameters or {}}
    return bool(names & {"F8_E4M3", "F8_E5M2", "I32", "I8", "U8"})


@dataclass(frozen=True)
class _Scheme:
    """How linear weights are stored in the checkpoint and at run time."""

    dense: float  # checkpoint bytes per dense linear weight
    experts: float  # checkpoint bytes per routed-expert weight
    dense_fixed: bool  # width set by the quantization, not by the run-time dtype
    experts_fixed: bool
    online: float | None  # bytes per linear weight after run-time quantization of a 16-bit checkpoint


def _scheme(facts: ModelFacts, quantization: str | None, known: int | None) -> _Scheme:
    ckpt = DTYPE_BYTES.get(facts.torch_dtype, 2)
    quant = facts.quantization_config
    method = normalize_method(quantization)
    if method and method not in CHECKPOINT_METHODS and method not in ONLINE_METHODS:
        allowed = ", ".join(sorted(set(CHECKPOINT_METHODS) | set(ONLINE_METHODS)))
        raise CapacityError(
            f"quantization {quantization!r} is not supported by the planner; use one of {allowed}"
        )
    if quant is not None:
        ckpt_method = normalize_method(str(quant.get("quant_method")))
        if method and method != ckpt_method:
            raise CapacityError(
                f"quantization {quantization!r} does not match the checkpoint of {facts.model_id}, "
                f"which is quantized with {ckpt_method}; leave quantization unset or use {ckpt_method}"
            )
        dense, experts = checkpoint_linear_bytes(quant)
        return _Scheme(dense, experts, dense < ckpt, experts < ckpt, None)
    if _quantized_by_counts(facts) or (method and method not in ONLINE_METHODS):
        if known is None:
            raise CapacityError(
                f"quantization {quantization!r} needs a checkpoint quantized with it, but the facts of "
                f"{facts.model_id} have no quantization_config and no safetensors size; lock the quantized "
                "checkpoint with `python -m capacity lock`"
            )
        # A quantized checkpoint whose config copy lacks the section: its size says how wide the weights are.
        return _Scheme(1.0, 1.0, True, True, None)
    online = ONLINE_METHODS[method] if method else None
    return _Scheme(float(ckpt), float(ckpt), False, False, online)


def weight_bytes(facts: ModelFacts, dtype: str = "auto", quantization: str | None = None) -> WeightBytes:
    """Bytes of every part as vLLM loads them with the given ``dtype`` and ``quantization``."""
    counts = count_parameters(facts)
    run = _resolve_dtype(facts, dtype)
    ckpt = DTYPE_BYTES.get(facts.torch_dtype, 2)
    quant = facts.quantization_config
    known = _known_checkpoint_bytes(facts, float(quant.get("bits", 4)) if quant else 4.0)
    scheme = _scheme(facts, quantization, known)
    plain = counts.embedding + counts.lm_head + counts.final_norm + counts.vision + sum(counts.layer_other)
    linear = sum(counts.layer_dense) * scheme.dense + sum(counts.layer_experts) * scheme.experts
    scale_plain = scale_linear = 1.0
    if known is not None and plain * ckpt + linear > 0:
        linear_known = known - plain * ckpt
        if (scheme.dense_fixed or scheme.experts_fixed) and linear_known > 0 and linear > 0:
            scale_linear = linear_known / linear
        else:
            scale_plain = scale_linear = known / (plain * ckpt + linear)

    def per_weight(width: float, fixed: bool) -> float:
        if fixed:
            return width * scale_linear
        if scheme.online is not None:
            return scheme.online * scale_linear
        return width * scale_linear * run / ckpt

    dense_run = per_weight(scheme.dense, scheme.dense_fixed)
    experts_run = per_weight(scheme.experts, scheme.experts_fixed)
    plain_run = scale_plain * run
    return WeightBytes(
        embedding=round(counts.embedding * plain_run),
        lm_head=round((counts.lm_head + counts.final_norm) * plain_run),
        layer_dense=tuple(
            round(d * dense_run + o * plain_run)
            for d, o in zip(counts.layer_dense, counts.layer_other, strict=True)
        ),
        layer_experts=tuple(round(e * experts_run) for e in counts.layer_experts),
        vision=round(counts.vision * plain_run),
    )


def checkpoint_bytes(facts: ModelFacts) -> int:
    """Bytes of the checkpoint files (what a cold start reads from the model store)."""
    quant = facts.quantization_config
    known = _known_checkpoint_bytes(facts, float(quant.get("bits", 4)) if quant else 4.0)
    if known is not None:
        return known
    return weight_bytes(facts, dtype=facts.torch_dtype if facts.torch_dtype in DTYPE_BYTES else "auto").total
