#!/usr/bin/env python3
"""Build Tandem's test model zoo: small, realistic ONNX models with random weights.

    .venv/bin/python tools/make_zoo.py --out zoo [--only mlp,bert]

For every model, <out>/<name>/ gets model.onnx (plus external data where noted),
inputs/<input>.npy (default binding, batch=2) and expected/<output>.npy computed by
onnxruntime (CPU, 2 intra-op threads). <out>/manifest.json lists them all.

Everything is deterministic (fixed seeds) and nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_common import (generator_main, GraphBuilder, collect_ops, default_opset, ensure_dir,  # noqa: E402
                        legacy_export_options,
                        graph_shape, ort_session, safe_filename)

BATCH = 2
F32 = np.float32
I64 = np.int64


# ----------------------------------------------------------------------------
# hand-built models
# ----------------------------------------------------------------------------

def build_mlp():
    g = GraphBuilder("mlp", seed=13)
    x = g.input("x", F32, ["batch", 256])
    h = g.op("MatMul", [x, g.weight("fc1.weight", (256, 512))])
    h = g.op("Add", [h, g.bias("fc1.bias", 512)])
    h = g.op("Relu", [h])
    # Gemm with transposed weight, as PyTorch Linear exports
    h = g.op("Gemm", [h, g.weight("fc2.weight", (256, 512), fan_in=512), g.bias("fc2.bias", 256)],
             alpha=1.0, beta=1.0, transB=1)
    h = g.op("Tanh", [h])
    h = g.op("MatMul", [h, g.weight("fc3.weight", (256, 128))])
    h = g.op("Add", [h, g.bias("fc3.bias", 128)])
    h = g.op("Sigmoid", [h])
    g.op("Gemm", [h, g.weight("head.weight", (128, 10)), g.bias("head.bias", 10)], outputs=["logits"])
    g.output("logits", F32, ["batch", 10])
    rng = np.random.default_rng(130)
    feeds = {"x": rng.standard_normal((BATCH, 256)).astype(F32)}
    return g.model(13, doc="MLP: MatMul+Add, Gemm, Relu/Tanh/Sigmoid"), feeds


def _conv(g, x, cin, cout, k, stride=1, pad=None, group=1, name="conv", bias=False):
    pad = k // 2 if pad is None else pad
    w = g.weight(f"{name}.weight", (cout, cin // group, k, k), fan_in=(cin // group) * k * k)
    ins = [x, w] + ([g.bias(f"{name}.bias", cout)] if bias else [])
    return g.op("Conv", ins, name=name, kernel_shape=[k, k], strides=[stride, stride],
                pads=[pad, pad, pad, pad], group=group, dilations=[1, 1])


def _bn(g, x, c, name="bn"):
    rng = g.rng
    scale = g.init(f"{name}.weight", (1.0 + 0.1 * rng.standard_normal(c)).astype(F32))
    b = g.init(f"{name}.bias", (0.05 * rng.standard_normal(c)).astype(F32))
    mean = g.init(f"{name}.running_mean", (0.05 * rng.standard_normal(c)).astype(F32))
    var = g.init(f"{name}.running_var", (1.0 + 0.2 * rng.random(c)).astype(F32))
    return g.op("BatchNormalization", [x, scale, b, mean, var], name=name, epsilon=1e-5, momentum=0.9)


def build_resnet():
    g = GraphBuilder("resnet", seed=15)
    x = g.input("input", F32, ["batch", 3, 64, 64])
    h = g.op("Relu", [_bn(g, _conv(g, x, 3, 16, 3, name="stem.conv"), 16, "stem.bn")])
    h = g.op("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 32x32

    def block(h, cin, cout, stride, name):
        y = g.op("Relu", [_bn(g, _conv(g, h, cin, cout, 3, stride, name=f"{name}.conv1"), cout, f"{name}.bn1")])
        y = _bn(g, _conv(g, y, cout, cout, 3, 1, name=f"{name}.conv2"), cout, f"{name}.bn2")
        if stride != 1 or cin != cout:
            sc = _bn(g, _conv(g, h, cin, cout, 1, stride, pad=0, name=f"{name}.down"), cout, f"{name}.down_bn")
        else:
            sc = h
        return g.op("Relu", [g.op("Add", [y, sc], name=f"{name}.add")])

    h = block(h, 16, 16, 1, "layer1")   # 32x32
    h = block(h, 16, 32, 2, "layer2")   # 16x16
    h = block(h, 32, 64, 2, "layer3")   # 8x8
    h = g.op("GlobalAveragePool", [h])
    h = g.op("Flatten", [h], axis=1)
    g.op("Gemm", [h, g.weight("fc.weight", (10, 64), fan_in=64), g.bias("fc.bias", 10)],
         transB=1, outputs=["logits"])
    g.output("logits", F32, ["batch", 10])
    rng = np.random.default_rng(150)
    feeds = {"input": rng.standard_normal((BATCH, 3, 64, 64)).astype(F32)}
    return g.model(15, doc="ResNet-style CNN (9 convs, BN, residual Adds)"), feeds


def build_mobilenet():
    g = GraphBuilder("mobilenet", seed=18)
    x = g.input("input", F32, ["batch", 3, 64, 64])
    zero = g.const("relu6.min", 0.0, F32)
    six = g.const("relu6.max", 6.0, F32)

    def relu6(t):
        return g.op("Clip", [t, zero, six], name="relu6")

    def se(t, c, r, name):
        s = g.op("GlobalAveragePool", [t], name=f"{name}.pool")
        s = g.op("Relu", [_conv(g, s, c, r, 1, pad=0, name=f"{name}.fc1", bias=True)])
        s = _conv(g, s, r, c, 1, pad=0, name=f"{name}.fc2", bias=True)
        s = g.op("HardSigmoid", [s], alpha=1.0 / 6.0, beta=0.5)
        return g.op("Mul", [t, s], name=f"{name}.scale")

    def inverted_residual(t, cin, cexp, cout, stride, name):
        y = g.op("HardSwish", [_bn(g, _conv(g, t, cin, cexp, 1, pad=0, name=f"{name}.expand"), cexp, f"{name}.bn1")])
        y = relu6(_bn(g, _conv(g, y, cexp, cexp, 3, stride, group=cexp, name=f"{name}.dw"), cexp, f"{name}.bn2"))
        y = se(y, cexp, max(8, cexp // 4), f"{name}.se")
        y = _bn(g, _conv(g, y, cexp, cout, 1, pad=0, name=f"{name}.project"), cout, f"{name}.bn3")
        if stride == 1 and cin == cout:
            y = g.op("Add", [y, t], name=f"{name}.residual")
        return y

    h = g.op("HardSwish", [_bn(g, _conv(g, x, 3, 16, 3, 2, name="stem"), 16, "stem.bn")])  # 32x32
    h = relu6(_bn(g, _conv(g, h, 16, 16, 3, 1, group=16, name="dw0"), 16, "dw0.bn"))
    h = inverted_residual(h, 16, 48, 24, 2, "block1")   # 16x16
    h = inverted_residual(h, 24, 72, 24, 1, "block2")   # 16x16, residual
    h = inverted_residual(h, 24, 96, 40, 2, "block3")   # 8x8
    h = g.op("HardSwish", [_bn(g, _conv(g, h, 40, 128, 1, pad=0, name="head.conv"), 128, "head.bn")])
    axes = g.const("pool.axes", [2, 3])
    h = g.op("ReduceMean", [h, axes], keepdims=0)  # opset 18: axes is an input
    h = g.op("HardSwish", [g.op("Gemm", [h, g.weight("classifier.0.weight", (128, 256)),
                                          g.bias("classifier.0.bias", 256)])])
    g.op("Gemm", [h, g.weight("classifier.1.weight", (256, 10)), g.bias("classifier.1.bias", 10)],
         outputs=["logits"])
    g.output("logits", F32, ["batch", 10])
    rng = np.random.default_rng(180)
    feeds = {"input": rng.standard_normal((BATCH, 3, 64, 64)).astype(F32)}
    return g.model(18, doc="MobileNetV3-style: depthwise conv, HardSwish, SE, ReduceMean(axes input)"), feeds


def _layernorm(g, x, d, name):
    scale = g.init(f"{name}.weight", (1.0 + 0.05 * g.rng.standard_normal(d)).astype(F32))
    bias = g.init(f"{name}.bias", (0.02 * g.rng.standard_normal(d)).astype(F32))
    return g.op("LayerNormalization", [x, scale, bias], name=name, axis=-1, epsilon=1e-5)


def _linear(g, x, din, dout, name, scale=1.0):
    y = g.op("MatMul", [x, g.weight(f"{name}.weight", (din, dout), scale=scale)], name=f"{name}.matmul")
    return g.op("Add", [y, g.bias(f"{name}.bias", dout)], name=f"{name}.add")


def _split_heads(g, t, heads, head_dim, name, transpose_k=False):
    shape = g.const(f"{name}.heads_shape", [0, 0, heads, head_dim])
    t = g.op("Reshape", [t, shape], name=f"{name}.reshape")
    return g.op("Transpose", [t], name=f"{name}.transpose", perm=[0, 2, 3, 1] if transpose_k else [0, 2, 1, 3])


def _merge_heads(g, t, hidden, name):
    t = g.op("Transpose", [t], name=f"{name}.transpose", perm=[0, 2, 1, 3])
    return g.op("Reshape", [t, g.const(f"{name}.merge_shape", [0, 0, hidden])], name=f"{name}.reshape")


def build_bert():
    hidden, heads, seq, vocab, ffn, layers = 128, 4, 32, 1000, 512, 2
    head_dim = hidden // heads
    g = GraphBuilder("bert", seed=20)
    ids = g.input("input_ids", I64, ["batch", seq])
    mask = g.input("attention_mask", I64, ["batch", seq])

    tok = g.op("Gather", [g.weight("embeddings.word", (vocab, hidden), fan_in=200), ids], axis=0)
    pos_ids = g.const("embeddings.position_ids", np.arange(seq)[None, :])
    pos = g.op("Gather", [g.weight("embeddings.position", (seq, hidden), fan_in=200), pos_ids], axis=0)
    h = _layernorm(g, g.op("Add", [tok, pos]), hidden, "embeddings.ln")

    # extended attention mask: (1 - mask) * -10000, shape [batch, 1, 1, seq]
    m = g.op("Cast", [mask], to=TensorProto.FLOAT)
    m = g.op("Sub", [g.const("one", 1.0, F32), m])
    m = g.op("Mul", [m, g.const("mask_value", -10000.0, F32)])
    ext_mask = g.op("Unsqueeze", [m, g.const("mask_axes", [1, 2])], name="ext_mask")
    inv_sqrt = g.const("inv_sqrt_head_dim", 1.0 / np.sqrt(head_dim), F32)

    for layer in range(layers):
        p = f"layer{layer}"
        q = _split_heads(g, _linear(g, h, hidden, hidden, f"{p}.q"), heads, head_dim, f"{p}.q")
        k = _split_heads(g, _linear(g, h, hidden, hidden, f"{p}.k"), heads, head_dim, f"{p}.k", transpose_k=True)
        v = _split_heads(g, _linear(g, h, hidden, hidden, f"{p}.v"), heads, head_dim, f"{p}.v")
        s = g.op("MatMul", [q, k], name=f"{p}.scores")
        s = g.op("Mul", [s, inv_sqrt], name=f"{p}.scale")
        s = g.op("Add", [s, ext_mask], name=f"{p}.masked")
        a = g.op("Softmax", [s], name=f"{p}.softmax", axis=-1)
        ctx = _merge_heads(g, g.op("MatMul", [a, v], name=f"{p}.context"), hidden, f"{p}.ctx")
        attn = _linear(g, ctx, hidden, hidden, f"{p}.attn_out")
        h = _layernorm(g, g.op("Add", [attn, h], name=f"{p}.res1"), hidden, f"{p}.ln1")
        f = _linear(g, h, hidden, ffn, f"{p}.ffn1")
        f = g.op("Gelu", [f], name=f"{p}.gelu", approximate="none" if layer == 0 else "tanh")
        f = _linear(g, f, ffn, hidden, f"{p}.ffn2")
        out_name = "last_hidden_state" if layer == layers - 1 else None
        res = g.op("Add", [f, h], name=f"{p}.res2")
        if out_name:
            h = g.op("LayerNormalization", [res, g.init(f"{p}.ln2.weight", np.ones(hidden, F32)),
                                            g.init(f"{p}.ln2.bias", np.zeros(hidden, F32))],
                     axis=-1, epsilon=1e-5, outputs=[out_name])
        else:
            h = _layernorm(g, res, hidden, f"{p}.ln2")
    cls = g.op("Gather", [h, g.const("cls_index", 0)], axis=1, name="cls")  # [batch, hidden]
    pooled = g.op("Gemm", [cls, g.weight("pooler.weight", (hidden, hidden)), g.bias("pooler.bias", hidden)])
    g.op("Tanh", [pooled], outputs=["pooler_output"])
    g.output("last_hidden_state", F32, ["batch", seq, hidden])
    g.output("pooler_output", F32, ["batch", hidden])

    rng = np.random.default_rng(200)
    input_ids = rng.integers(1, vocab, size=(BATCH, seq), dtype=I64)
    input_ids[:, 0] = 101 % vocab  # [CLS]
    attn = np.ones((BATCH, seq), dtype=I64)
    attn[1, 20:] = 0            # second sequence padded
    input_ids[1, 20:] = 0
    return g.model(20, doc="BERT-style encoder, 2 layers, hidden 128, 4 heads, Gelu-20"), \
        {"input_ids": input_ids, "attention_mask": attn}


def build_gpt():
    hidden, heads, seq, vocab, layers = 128, 4, 32, 1000, 2
    head_dim = hidden // heads
    g = GraphBuilder("gpt", seed=21)
    ids = g.input("input_ids", I64, ["batch", seq])

    tok = g.op("Gather", [g.weight("wte", (vocab, hidden), fan_in=200), ids], axis=0)
    # positions from the runtime sequence length: Range(0, Shape(ids)[1], 1)
    ids_shape = g.op("Shape", [ids])
    seq_len = g.op("Gather", [ids_shape, g.const("seq_axis", 1)], axis=0, name="seq_len")  # scalar
    positions = g.op("Range", [g.const("zero_i", 0), seq_len, g.const("one_i", 1)], name="positions")
    pos = g.op("Gather", [g.weight("wpe", (seq, hidden), fan_in=200), positions], axis=0)
    h = g.op("Add", [tok, pos])

    # causal mask: Trilu(ConstantOfShape([seq, seq], 1)) -> bool, used with Where
    seq_1d = g.op("Unsqueeze", [seq_len, g.const("axes0", [0])])
    mask_shape = g.op("Concat", [seq_1d, seq_1d], axis=0, name="mask_shape")
    ones = g.op("ConstantOfShape", [mask_shape], value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]))
    lower = g.op("Trilu", [ones], upper=0)
    causal = g.op("Cast", [lower], to=TensorProto.BOOL, name="causal_mask")
    neg_big = g.const("neg_big", -1e9, F32)
    inv_sqrt = g.const("inv_sqrt_head_dim", 1.0 / np.sqrt(head_dim), F32)
    sqrt2 = g.const("sqrt2", np.sqrt(2.0), F32)
    half = g.const("half", 0.5, F32)
    one = g.const("one", 1.0, F32)

    def gelu_erf(t, name):
        e = g.op("Erf", [g.op("Div", [t, sqrt2], name=f"{name}.div")], name=f"{name}.erf")
        e = g.op("Add", [e, one], name=f"{name}.add")
        return g.op("Mul", [g.op("Mul", [t, e], name=f"{name}.mul"), half], name=f"{name}.half")

    for layer in range(layers):
        p = f"h{layer}"
        x = _layernorm(g, h, hidden, f"{p}.ln_1")
        qkv = _linear(g, x, hidden, 3 * hidden, f"{p}.c_attn")
        q, k, v = g.op("Split", [qkv], n_out=3, name=f"{p}.split", axis=-1, num_outputs=3)
        q = _split_heads(g, q, heads, head_dim, f"{p}.q")
        k = _split_heads(g, k, heads, head_dim, f"{p}.k", transpose_k=True)
        v = _split_heads(g, v, heads, head_dim, f"{p}.v")
        s = g.op("Mul", [g.op("MatMul", [q, k], name=f"{p}.scores"), inv_sqrt], name=f"{p}.scale")
        s = g.op("Where", [causal, s, neg_big], name=f"{p}.causal")
        a = g.op("Softmax", [s], name=f"{p}.softmax", axis=-1)
        ctx = _merge_heads(g, g.op("MatMul", [a, v], name=f"{p}.context"), hidden, f"{p}.ctx")
        h = g.op("Add", [h, _linear(g, ctx, hidden, hidden, f"{p}.c_proj")], name=f"{p}.res1")
        x = _layernorm(g, h, hidden, f"{p}.ln_2")
        f = gelu_erf(_linear(g, x, hidden, 4 * hidden, f"{p}.mlp.c_fc"), f"{p}.gelu")
        h = g.op("Add", [h, _linear(g, f, 4 * hidden, hidden, f"{p}.mlp.c_proj")], name=f"{p}.res2")
    h = _layernorm(g, h, hidden, "ln_f")
    g.op("MatMul", [h, g.weight("lm_head.weight", (hidden, vocab))], outputs=["logits"])
    g.output("logits", F32, ["batch", seq, vocab])
    rng = np.random.default_rng(210)
    return g.model(21, doc="GPT-style causal decoder, 2 layers, Trilu/Where mask, Erf GELU"), \
        {"input_ids": rng.integers(0, vocab, size=(BATCH, seq), dtype=I64)}


def build_dlrm():
    g = GraphBuilder("dlrm", seed=19)
    dense = g.input("dense_features", F32, ["batch", 13])
    table_rows = [100_000, 120_000, 1_000]
    emb_dim, bag = 16, 4
    sparse = [g.input(f"sparse_{i}", I64, ["batch", bag]) for i in range(3)]

    def mlp(t, dims, name, last_act=True):
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            t = g.op("Gemm", [t, g.weight(f"{name}.{i}.weight", (a, b)), g.bias(f"{name}.{i}.bias", b)],
                     name=f"{name}.{i}")
            if last_act or i < len(dims) - 2:
                t = g.op("Relu", [t])
        return t

    bottom = mlp(dense, [13, 64, 32, emb_dim], "bot")          # [batch, 16]
    sum_axes = g.const("bag_axes", [1])
    feats = [bottom]
    for i, (rows, idx) in enumerate(zip(table_rows, sparse)):
        table = g.init(f"emb_{i}", (g.rng.standard_normal((rows, emb_dim)) * 0.1).astype(F32))
        e = g.op("Gather", [table, idx], axis=0, name=f"emb_{i}.gather")  # [batch, bag, 16]
        feats.append(g.op("ReduceSum", [e, sum_axes], name=f"emb_{i}.bag", keepdims=0))  # [batch, 16]
    t = g.op("Concat", feats, axis=1, name="interact.concat")  # [batch, 64]
    t = g.op("Reshape", [t, g.const("interact.shape", [-1, 4, emb_dim])], name="interact.reshape")
    tt = g.op("Transpose", [t], perm=[0, 2, 1], name="interact.transpose")
    z = g.op("MatMul", [t, tt], name="interact.bmm")             # [batch, 4, 4]
    z = g.op("Flatten", [z], axis=1, name="interact.flatten")    # [batch, 16]
    tril = [i * 4 + j for i in range(4) for j in range(i)]        # strictly lower triangle
    z = g.op("Gather", [z, g.const("interact.tril_idx", tril)], axis=1, name="interact.tril")  # [batch, 6]
    top_in = g.op("Concat", [bottom, z], axis=1, name="top.concat")  # [batch, 22]
    logit = mlp(top_in, [emb_dim + len(tril), 64, 32, 1], "top", last_act=False)
    g.op("Sigmoid", [logit], outputs=["click_probability"])
    g.output("click_probability", F32, ["batch", 1])

    rng = np.random.default_rng(190)
    feeds = {"dense_features": np.abs(rng.standard_normal((BATCH, 13))).astype(F32)}
    for i, rows in enumerate(table_rows):
        feeds[f"sparse_{i}"] = rng.integers(0, rows, size=(BATCH, bag), dtype=I64)
    return g.model(19, doc="DLRM: bottom MLP, 3 embedding bags (Gather+ReduceSum), dot interaction"), feeds


def build_postproc():
    n_boxes, n_classes = 200, 3
    g = GraphBuilder("postproc", seed=16)
    boxes = g.input("boxes", F32, [1, n_boxes, 4])
    scores = g.input("scores", F32, [1, n_classes, n_boxes])

    best = g.op("ReduceMax", [scores], axes=[1], keepdims=0, name="best_score")   # [1, N]
    best_cls = g.op("ArgMax", [scores], axis=1, keepdims=0, name="best_class")    # [1, N] int64
    count = g.op("Gather", [g.op("Shape", [scores]), g.const("box_axis", [2])], axis=0, name="box_count")  # [1]
    k = g.op("Min", [g.const("max_candidates", [100]), count], name="k")           # [1]
    top_scores, top_idx = g.op("TopK", [best, k], n_out=2, name="topk", axis=1, largest=1, sorted=1)
    top_classes = g.op("GatherElements", [best_cls, top_idx], axis=1, name="top_classes_ge")
    boxes2d = g.op("Squeeze", [boxes, g.const("axes0", [0])], name="boxes2d")     # [N, 4]
    idx1d = g.op("Squeeze", [top_idx, g.const("axes0b", [0])], name="top_idx1d")  # [k]
    top_boxes = g.op("Unsqueeze", [g.op("Gather", [boxes2d, idx1d], axis=0, name="top_boxes2d"),
                                   g.const("axes0c", [0])], name="top_boxes")       # [1, k, 4]
    valid = g.op("Greater", [top_scores, g.const("score_threshold", 0.5, F32)], name="valid")
    g.op("NonZero", [valid], outputs=["valid_positions"])                           # [2, n_valid]

    # NMS only when anything scores above the threshold; else an empty [0, 3] selection.
    overall = g.op("ReduceMax", [scores], keepdims=0, name="overall_max")           # scalar
    cond = g.op("Greater", [overall, g.const("cond_threshold", 0.5, F32)], name="has_detections")
    nms_scores = g.op("Unsqueeze", [top_scores, g.const("axes1", [1])], name="nms_scores")  # [1, 1, k]

    then_g = GraphBuilder("then_nms", seed=0, prefix="then.")
    sel = then_g.op("NonMaxSuppression",
                    [top_boxes, nms_scores, then_g.const("max_out", [100]), then_g.const("iou", [0.5], F32),
                     then_g.const("score_thr", [0.3], F32)], outputs=["nms_selected"], center_point_box=0)
    then_g.output(sel, I64, ["num_selected", 3])
    else_g = GraphBuilder("else_empty", seed=0, prefix="else.")
    empty = else_g.op("Identity", [else_g.const("empty_sel", np.zeros((0, 3), I64))], outputs=["empty_selected"])
    else_g.output(empty, I64, [0, 3])
    g.op("If", [cond], outputs=["selected_indices"], name="maybe_nms",
         then_branch=then_g.graph(), else_branch=else_g.graph())

    g.op("Identity", [top_scores], outputs=["top_scores"])
    g.op("Identity", [top_classes], outputs=["top_classes"])
    g.output("selected_indices", I64, ["num_selected", 3])
    g.output("top_scores", F32, [1, "num_candidates"])
    g.output("top_classes", I64, [1, "num_candidates"])
    g.output("valid_positions", I64, [2, "num_valid"])

    rng = np.random.default_rng(160)
    xy = rng.uniform(0, 400, size=(n_boxes, 2))
    wh = rng.uniform(10, 120, size=(n_boxes, 2))
    # clustered duplicates so NMS actually suppresses something
    xy[100:150] = xy[:50] + rng.uniform(-5, 5, size=(50, 2))
    wh[100:150] = wh[:50]
    b = np.concatenate([xy, xy + wh], axis=1)[None].astype(F32)            # x1<x2, y1<y2
    s = rng.beta(0.5, 2.0, size=(1, n_classes, n_boxes)).astype(F32)
    s[0, 0, 0] = 0.97
    return g.model(16, doc="Detection post-processing: TopK, ArgMax, NonZero, NMS inside If"), \
        {"boxes": b, "scores": s}


def build_loop():
    hidden, in_dim, steps = 64, 32, 8
    g = GraphBuilder("loop", seed=17)
    x = g.input("x", F32, ["batch", steps, in_dim])
    wx = g.weight("rnn.w_ih", (in_dim, hidden), scale=0.7)
    wh = g.weight("rnn.w_hh", (hidden, hidden), scale=0.5)
    b = g.bias("rnn.bias", hidden)

    x_shape = g.op("Shape", [x])
    trip = g.op("Gather", [x_shape, g.const("time_axis", 1)], axis=0, name="trip_count")  # scalar int64
    batch = g.op("Gather", [x_shape, g.const("batch_axis", [0])], axis=0, name="batch_dim")  # [1]
    h0_shape = g.op("Concat", [batch, g.const("hidden_dim", [hidden])], axis=0, name="h0_shape")
    h0 = g.op("ConstantOfShape", [h0_shape], name="h0",
              value=helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0]))
    cond0 = g.const("loop_cond", True, np.bool_)

    body = GraphBuilder("rnn_body", seed=0, prefix="body.")
    it = body.input("body.iter", I64, [])
    cin = body.input("body.cond_in", np.bool_, [])
    h_prev = body.input("body.h_prev", F32, ["batch", hidden])
    x_t = body.op("Gather", [x, it], axis=1, name="x_t")                   # outer-scope x -> [batch, in]
    pre = body.op("Add", [body.op("MatMul", [x_t, wx], name="xw"), body.op("MatMul", [h_prev, wh], name="hw")])
    h_new = body.op("Tanh", [body.op("Add", [pre, b], name="pre_b")], outputs=["body.h_next"])
    body.op("Identity", [cin], outputs=["body.cond_out"])
    body.op("Identity", [h_new], outputs=["body.h_scan"])
    body.output("body.cond_out", np.bool_, [])
    body.output("body.h_next", F32, ["batch", hidden])
    body.output("body.h_scan", F32, ["batch", hidden])
    h_last, hs = g.op("Loop", [trip, cond0, h0], outputs=["h_last", "hidden_states"], name="rnn_loop",
                      body=body.graph())

    # a simple data-dependent If: rectify h_last when its mean is positive, else negate it
    mean = g.op("ReduceMean", [h_last], keepdims=0, name="h_mean")
    cond = g.op("Greater", [mean, g.const("zero_f", 0.0, F32)], name="h_positive")
    then_g = GraphBuilder("then_relu", prefix="then.")
    then_g.op("Relu", [h_last], outputs=["then_out"])
    then_g.output("then_out", F32, ["batch", hidden])
    else_g = GraphBuilder("else_neg", prefix="else.")
    else_g.op("Neg", [h_last], outputs=["else_out"])
    else_g.output("else_out", F32, ["batch", hidden])
    feat = g.op("If", [cond], name="rectify", then_branch=then_g.graph(), else_branch=else_g.graph())
    g.op("Gemm", [feat, g.weight("head.weight", (hidden, 10)), g.bias("head.bias", 10)], outputs=["logits"])
    g.output("logits", F32, ["batch", 10])
    g.output("hidden_states", F32, [steps, "batch", hidden])
    rng = np.random.default_rng(170)
    return g.model(17, doc="RNN as a Loop (carried h, scan output) plus a simple If"), \
        {"x": rng.standard_normal((BATCH, steps, in_dim)).astype(F32)}


# ----------------------------------------------------------------------------
# torch.onnx.export models
# ----------------------------------------------------------------------------

def _torch_export(module, args, path, input_names, output_names, dynamic_axes, opset=17):
    import torch
    module.eval()
    with torch.no_grad():
        torch.onnx.export(module, args, path, input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=opset, do_constant_folding=True,
                          export_params=True, **legacy_export_options(torch))


def build_tv(arch):
    def build(path):
        import torch
        import torchvision
        torch.manual_seed(0)
        model = getattr(torchvision.models, arch)(weights=None, num_classes=1000)
        rng = np.random.default_rng(17)
        x = rng.standard_normal((BATCH, 3, 64, 64)).astype(F32)
        _torch_export(model, (torch.from_numpy(x),), path, ["input"], ["logits"],
                      {"input": {0: "batch"}, "logits": {0: "batch"}})
        with torch.no_grad():
            ref = model(torch.from_numpy(x)).numpy()
        return {"input": x}, {"logits": ref}
    return build


def build_torch_embeddingbag(path):
    import torch
    from torch import nn

    class BagModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = nn.EmbeddingBag(1000, 16, mode="sum")
            self.fc = nn.Linear(16, 8)

        def forward(self, indices, offsets):
            return self.fc(self.bag(indices, offsets))

    torch.manual_seed(0)
    model = BagModel()
    indices = np.array([3, 17, 256, 999, 42, 42, 7, 500, 1, 0], dtype=I64)   # 10 lookups
    offsets = np.array([0, 4], dtype=I64)                                     # bags of 4 and 6
    _torch_export(model, (torch.from_numpy(indices), torch.from_numpy(offsets)), path,
                  ["indices", "offsets"], ["output"],
                  {"indices": {0: "num_indices"}, "offsets": {0: "batch"}, "output": {0: "batch"}})
    with torch.no_grad():
        ref = model(torch.from_numpy(indices), torch.from_numpy(offsets)).numpy()
    return {"indices": indices, "offsets": offsets}, {"output": ref}


# ----------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------

HAND_BUILT = {
    "mlp": build_mlp,
    "resnet": build_resnet,
    "mobilenet": build_mobilenet,
    "bert": build_bert,
    "gpt": build_gpt,
    "dlrm": build_dlrm,
    "postproc": build_postproc,
    "loop": build_loop,
}
EXTERNAL_DATA = {"dlrm": "dlrm.weights"}
TORCH = {
    "tv_resnet18": build_tv("resnet18"),
    "tv_mobilenet_v3_small": build_tv("mobilenet_v3_small"),
    "torch_embeddingbag": build_torch_embeddingbag,
}
EXTRA_DIMS = {"torch_embeddingbag": {"num_indices": 10}}
ALL = list(HAND_BUILT) + list(TORCH)


def _tensor_entry(model, name, arr, subdir, declared):
    # "file" is relative to the zoo root, like the model's "path"
    return {"name": name, "file": f"{model}/{subdir}/{safe_filename(name)}.npy", "dtype": str(arr.dtype),
            "shape": list(arr.shape), "graph_shape": declared}


def make_one(name, out_root):
    t0 = time.time()
    mdir = os.path.join(out_root, name)
    if os.path.exists(mdir):
        shutil.rmtree(mdir)
    ensure_dir(mdir)
    path = os.path.join(mdir, "model.onnx")
    if name in HAND_BUILT:
        model, feeds = HAND_BUILT[name]()
        reference = {}
        source = "hand-built"
        if name in EXTERNAL_DATA:
            onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=EXTERNAL_DATA[name], size_threshold=1024, convert_attribute=False)
        else:
            onnx.save_model(model, path)
    else:
        feeds, reference = TORCH[name](path)  # reference: PyTorch's own outputs
        source = "torch.onnx.export"

    onnx.checker.check_model(path, full_check=True)
    model = onnx.load(path, load_external_data=False)
    ops = sorted(collect_ops(model.graph))
    opset = default_opset(model)
    declared_in = {vi.name: graph_shape(vi) for vi in model.graph.input}
    declared_out = {vi.name: graph_shape(vi) for vi in model.graph.output}
    init_names = {t.name for t in model.graph.initializer}
    graph_inputs = [vi.name for vi in model.graph.input if vi.name not in init_names]
    if sorted(graph_inputs) != sorted(feeds):
        raise RuntimeError(f"{name}: graph inputs {graph_inputs} != feeds {sorted(feeds)}")

    sess = ort_session(path)
    out_names = [o.name for o in sess.get_outputs()]
    t_run = time.time()
    results = sess.run(out_names, feeds)
    run_ms = (time.time() - t_run) * 1e3

    ensure_dir(os.path.join(mdir, "inputs"))
    ensure_dir(os.path.join(mdir, "expected"))
    inputs, outputs = [], []
    for iname in graph_inputs:
        e = _tensor_entry(name, iname, feeds[iname], "inputs", declared_in[iname])
        np.save(os.path.join(out_root, e["file"]), feeds[iname])
        inputs.append(e)
    for oname, arr in zip(out_names, results):
        arr = np.asarray(arr)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise RuntimeError(f"{name}: output {oname} has non-finite values")
        if oname in reference and not np.allclose(arr, reference[oname], rtol=1e-3, atol=1e-4):
            err = float(np.max(np.abs(arr - reference[oname])))
            raise RuntimeError(f"{name}: onnxruntime and torch disagree on {oname} (max abs err {err})")
        e = _tensor_entry(name, oname, arr, "expected", declared_out.get(oname))
        np.save(os.path.join(out_root, e["file"]), arr)
        outputs.append(e)

    # Only the symbolic dims the inputs declare: `tandem --dim` refuses a name the model lacks.
    symbols = {d.dim_param for vi in model.graph.input for d in vi.type.tensor_type.shape.dim
               if d.dim_param}
    dims = {k: v for k, v in {"batch": BATCH, **EXTRA_DIMS.get(name, {})}.items() if k in symbols}
    files = sorted(os.listdir(mdir))
    external = [f for f in files if f not in ("model.onnx", "inputs", "expected")]
    entry = {
        "name": name,
        "path": f"{name}/model.onnx",
        "opset": opset,
        "ir_version": model.ir_version,
        "dims": dims,
        "inputs": inputs,
        "outputs": outputs,
        "source": source,
        "ops": ops,
        "external_data": external,
        "num_nodes": len(model.graph.node),
        "num_params": int(sum(int(np.prod(t.dims)) for t in model.graph.initializer)),
    }
    size = sum(os.path.getsize(os.path.join(mdir, f)) for f in files if os.path.isfile(os.path.join(mdir, f)))
    io = ", ".join(f"{i['name']}{i['shape']}" for i in inputs) + " -> " + \
        ", ".join(f"{o['name']}{o['shape']}" for o in outputs)
    print(f"make_zoo: {name:22s} opset {opset:2d} {len(model.graph.node):4d} nodes {len(ops):2d} op types "
          f"{size / 1e6:6.1f} MB  ort {run_ms:6.1f} ms  build {time.time() - t0:5.1f} s  {io}", flush=True)
    return entry


def main(argv=None):
    generator_main("make_zoo", __doc__, "zoo", ALL, make_one, argv)


if __name__ == "__main__":
    main()
