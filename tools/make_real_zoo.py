#!/usr/bin/env python3
"""Build the real-size tier of Tandem's test model zoo: models at the sizes users run.

    .venv/bin/python tools/make_real_zoo.py --out zoo/real [--only resnet18,gpt_fold]

Every model is made from Debian's torch/torchvision by torch.onnx.export (opset 17), with
random, seeded weights (nothing is downloaded). For every model, <out>/<name>/ gets model.onnx,
inputs/<input>.npy and expected/<output>.npy computed by onnxruntime (CPU EP, 2 intra-op
threads), each output checked against the PyTorch module's own output. <out>/manifest.json
lists them in the format of zoo/manifest.json (tests/zoo/README.md), plus "size_mb", "ort_ms"
(median of 3 runs after one warm-up), "doc" and, for the detector, "stability".

Models:
  resnet18, mobilenet_v3_small, vit_2l     torchvision classifiers, 1x3x224x224, dynamic batch
  bert_{fold,nofold}                       BERT-style encoder (token, position and type
                                           embeddings, attention mask), batch_first
  tenc_seqfirst_{fold,nofold}              torch's nn.TransformerEncoder, batch_first=False:
                                           tokens [sequence, batch], key padding mask
  gpt_{fold,nofold}                        GPT-style causal decoder, tied LM head
  dlrm_bags                                dense MLP + 4 nn.EmbeddingBag(sum) tables with offsets
                                           (one Loop over the bags each), 128 bags per table
  ssdlite320                               torchvision ssdlite320_mobilenet_v3_large with its
                                           post-processing (TopK, NonZero, NonMaxSuppression in If)
The transformers are exported twice: do_constant_folding=True (_fold) and False (_nofold).

BatchNorm statistics: torchvision's random initialisation leaves BN's running statistics at
mean 0 / variance 1, under which mobilenet_v3's activations vanish (logits ~1e-9, SSDLite's
features ~1e-13, every detection score exactly 1/91). So every model with BatchNorm first has
its running statistics estimated on seeded standard-normal images (train mode for BN only,
cumulative average), as a trained model's would be.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
import warnings

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_common import (generator_main, ORT_THREADS, collect_ops, default_opset, ensure_dir,  # noqa: E402
                        legacy_export_options,
                        graph_shape, ort_session, safe_filename)

F32 = np.float32
I64 = np.int64
OPSET = 17          # the newest torch 1.13 exports
SEQ = 128           # sequence length of the transformers' reference inputs
TEXT_BATCH = 2      # two sequences: one full, one with padding


def _torch():
    import torch
    torch.set_num_threads(ORT_THREADS)
    return torch


def export(module, args, path, input_names, output_names, dynamic_axes, fold=True, no_grad=True):
    """torch.onnx.export at opset 17. no_grad=False keeps autograd on during tracing, which keeps
    nn.MultiheadAttention off its fused fast path (torch._native_multi_head_attention, which the
    exporter cannot write) for modules with batch_first=True."""
    import contextlib
    torch = _torch()
    module.eval()
    ctx = torch.no_grad() if no_grad else contextlib.nullcontext()
    with ctx, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=OPSET, do_constant_folding=fold,
                          export_params=True, **legacy_export_options(torch))


def torch_outputs(module, feeds, names):
    torch = _torch()
    with torch.no_grad():
        out = module(*[torch.from_numpy(feeds[n]) for n in feeds])
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return {n: o.numpy() for n, o in zip(names, out)}


def recalibrate_batchnorm(model, make_batch, steps=4):
    """Estimate BN running statistics from seeded random batches (see the module docstring)."""
    torch = _torch()
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    model.eval()
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the steps
        bn.train()
    with torch.no_grad():
        for step in range(steps):
            make_batch(model, step)
    for bn in bns:
        bn.train(False)
    return len(bns)


# ----------------------------------------------------------------------------
# torchvision classifiers at 224x224, batch 1
# ----------------------------------------------------------------------------

def _image(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def build_classifier(arch):
    def build(path, fold):
        torch = _torch()
        import torchvision
        torch.manual_seed(0)
        if arch == "vit_2l":
            # vit_b_16's widths (patch 16, hidden 768, 12 heads, MLP 3072) with 2 encoder layers
            # instead of 12, so that the file stays under 100 MB.
            model = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=2,
                                                         num_heads=12, hidden_dim=768, mlp_dim=3072,
                                                         num_classes=1000)
            # torchvision zero-initialises the classifier (logits all 0): give it random weights.
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
            torch.nn.init.normal_(model.heads.head.bias, std=0.02)
            doc = "vit_b_16 widths, 2 encoder layers (of 12), 224x224, dynamic batch"
        else:
            model = getattr(torchvision.models, arch)(weights=None, num_classes=1000)
            gen = torch.Generator().manual_seed(1)
            n = recalibrate_batchnorm(model, lambda m, s: m(torch.randn(8, 3, 224, 224, generator=gen)))
            doc = f"torchvision {arch}, 224x224, dynamic batch, {n} BatchNorms with estimated statistics"
        model.eval()
        feeds = {"input": _image(224, (1, 3, 224, 224))}
        export(model, (torch.from_numpy(feeds["input"]),), path, ["input"], ["logits"],
               {"input": {0: "batch"}, "logits": {0: "batch"}}, no_grad=(arch != "vit_2l"))
        return feeds, torch_outputs(model, feeds, ["logits"]), {"doc": doc}
    return build


# ----------------------------------------------------------------------------
# transformers
# ----------------------------------------------------------------------------

def _text_inputs(seed, vocab, batch=TEXT_BATCH, seq=SEQ, pad_from=100):
    """Token ids within the vocabulary (0 = padding, 1 = CLS, 2 = SEP, words from 5 up) and an
    attention mask of 1s, the second sequence padded from position pad_from on."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, size=(batch, seq), dtype=I64)
    mask = np.ones((batch, seq), dtype=I64)
    ids[:, 0] = 1
    ids[0, -1] = 2
    if batch > 1:
        ids[1, pad_from - 1] = 2
        ids[1, pad_from:] = 0
        mask[1, pad_from:] = 0
    return ids, mask


def _bert_module(vocab, hidden, heads, layers, ffn, max_pos):
    torch = _torch()
    nn = torch.nn

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads, self.head_dim = heads, hidden // heads
            self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
            self.out = nn.Linear(hidden, hidden)

        def split(self, t):  # [B, S, H] -> [B, heads, S, head_dim]
            b, s, _ = t.shape
            return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)

        def forward(self, h, ext_mask):
            q, k, v = self.split(self.query(h)), self.split(self.key(h)), self.split(self.value(h))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + ext_mask
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            b, _, s, _ = ctx.shape
            return self.out(ctx.transpose(1, 2).reshape(b, s, hidden))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = SelfAttention()
            self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
            self.ffn1, self.ffn2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, h, ext_mask):
            h = self.ln1(h + self.attn(h, ext_mask))
            return self.ln2(h + self.ffn2(nn.functional.gelu(self.ffn1(h))))

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(vocab, hidden, padding_idx=0)
            self.position = nn.Embedding(max_pos, hidden)
            self.token_type = nn.Embedding(2, hidden)
            self.ln = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.pooler = nn.Linear(hidden, hidden)
            self.register_buffer("position_ids", torch.arange(max_pos)[None, :], persistent=False)

        def forward(self, input_ids, attention_mask):
            seq = input_ids.shape[1]
            pos = self.position(self.position_ids[:, :seq])
            h = self.ln(self.word(input_ids) + pos + self.token_type(torch.zeros_like(input_ids)))
            ext = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * -10000.0
            for layer in self.layers:
                h = layer(h, ext)
            return h, torch.tanh(self.pooler(h[:, 0]))

    return Bert()


def build_bert(path, fold):
    torch = _torch()
    vocab, hidden, heads, layers, ffn, max_pos = 16384, 384, 6, 4, 1536, 512
    torch.manual_seed(0)
    model = _bert_module(vocab, hidden, heads, layers, ffn, max_pos).eval()
    for p in model.parameters():  # BERT's initialisation: normal(0, 0.02) weights
        if p.dim() > 1:
            torch.nn.init.normal_(p, std=0.02)
    ids, mask = _text_inputs(30, vocab)
    feeds = {"input_ids": ids, "attention_mask": mask}
    dyn = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
           "last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}}
    export(model, (torch.from_numpy(ids), torch.from_numpy(mask)), path, list(feeds),
           ["last_hidden_state", "pooler_output"], dyn, fold=fold)
    doc = (f"BERT-style encoder: vocab {vocab}, hidden {hidden}, {heads} heads, {layers} layers, "
           f"FFN {ffn}, hand-written attention, batch_first, additive mask from attention_mask")
    return feeds, torch_outputs(model, feeds, ["last_hidden_state", "pooler_output"]), {"doc": doc}


def build_tenc_seqfirst(path, fold):
    torch = _torch()
    nn = torch.nn
    vocab, d, heads, layers, ffn, max_len, classes = 8192, 256, 8, 4, 1024, 512, 16

    class SeqFirstEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d, padding_idx=0)
            position = torch.arange(max_len)[:, None]
            freq = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
            pe = torch.zeros(max_len, 1, d)
            pe[:, 0, 0::2] = torch.sin(position * freq)
            pe[:, 0, 1::2] = torch.cos(position * freq)
            self.register_buffer("pe", pe)
            layer = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, activation="gelu",
                                               batch_first=False)
            self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d),
                                                 enable_nested_tensor=False)
            self.classifier = nn.Linear(d, classes)

        def forward(self, src, src_key_padding_mask):
            # src: [sequence, batch] token ids; src_key_padding_mask: [batch, sequence], True = pad
            h = self.embed(src) * math.sqrt(d) + self.pe[: src.shape[0]]
            h = self.encoder(h, src_key_padding_mask=src_key_padding_mask)  # [sequence, batch, d]
            keep = (~src_key_padding_mask).transpose(0, 1).unsqueeze(-1).to(h.dtype)
            pooled = (h * keep).sum(0) / keep.sum(0)
            return h, self.classifier(pooled)

    torch.manual_seed(0)
    model = SeqFirstEncoder().eval()
    # nn.TransformerEncoder deep-copies one layer: give every layer its own random weights
    for layer in model.encoder.layers:
        layer.self_attn._reset_parameters()
        for m in (layer.self_attn.out_proj, layer.linear1, layer.linear2):
            m.reset_parameters()
    ids, mask = _text_inputs(31, vocab, pad_from=90)
    feeds = {"src": np.ascontiguousarray(ids.T), "src_key_padding_mask": mask == 0}
    dyn = {"src": {0: "sequence", 1: "batch"}, "src_key_padding_mask": {0: "batch", 1: "sequence"},
           "hidden": {0: "sequence", 1: "batch"}, "logits": {0: "batch"}}
    export(model, tuple(torch.from_numpy(feeds[n]) for n in feeds), path, list(feeds),
           ["hidden", "logits"], dyn, fold=fold)
    doc = (f"torch nn.TransformerEncoder, batch_first=False (tokens and hidden states are "
           f"[sequence, batch, ...]): vocab {vocab}, d_model {d}, {heads} heads, {layers} layers, "
           f"FFN {ffn}, GELU, bool key padding mask, masked mean pooling")
    return feeds, torch_outputs(model, feeds, ["hidden", "logits"]), {"doc": doc}


def build_gpt(path, fold):
    torch = _torch()
    nn = torch.nn
    vocab, d, heads, layers, n_ctx = 8192, 512, 8, 4, 512

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool))
                                 .view(1, 1, n_ctx, n_ctx), persistent=False)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // heads)
            causal = self.bias[:, :, :t, :t]
            w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
            a = torch.matmul(torch.softmax(w, dim=-1), v).transpose(1, 2).reshape(b, t, d)
            x = x + self.c_proj(a)
            return x + self.mlp_proj(nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(n_ctx, d)
            self.h = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(d)

        def forward(self, input_ids):
            positions = torch.arange(input_ids.shape[1], dtype=torch.long)
            x = self.wte(input_ids) + self.wpe(positions)[None]
            for block in self.h:
                x = block(x)
            return nn.functional.linear(self.ln_f(x), self.wte.weight)  # tied LM head

    torch.manual_seed(0)
    model = Gpt().eval()
    for name, p in model.named_parameters():  # GPT-2's initialisation
        if p.dim() > 1:
            torch.nn.init.normal_(p, std=0.02 / (math.sqrt(2 * layers) if name.endswith("proj.weight") else 1))
    ids, _ = _text_inputs(32, vocab, pad_from=SEQ)
    feeds = {"input_ids": ids}
    export(model, (torch.from_numpy(ids),), path, ["input_ids"], ["logits"],
           {"input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}, fold=fold)
    doc = (f"GPT-style causal decoder: vocab {vocab}, d {d}, {heads} heads, {layers} layers, "
           f"context {n_ctx}, Range positions, tril-buffer causal mask (Slice, Where), tanh GELU, "
           f"LM head tied to the token embedding")
    return feeds, torch_outputs(model, feeds, ["logits"]), {"doc": doc}


# ----------------------------------------------------------------------------
# recommender with EmbeddingBag tables
# ----------------------------------------------------------------------------

DLRM_TABLES = [100_000, 100_000, 50_000, 20_000]
DLRM_BAGS = 128


def build_dlrm_bags(path, fold):
    torch = _torch()
    nn = torch.nn
    dense_dim, emb = 13, 64

    def mlp(dims, last_act=True):
        layers = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(a, b))
            if last_act or i < len(dims) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    n_feat = len(DLRM_TABLES) + 1
    tril = [(i, j) for i in range(n_feat) for j in range(i)]

    class Dlrm(nn.Module):
        def __init__(self):
            super().__init__()
            self.bottom = mlp([dense_dim, 512, 256, emb])
            self.tables = nn.ModuleList(nn.EmbeddingBag(rows, emb, mode="sum") for rows in DLRM_TABLES)
            self.top = mlp([emb + len(tril), 512, 256, 1], last_act=False)
            self.register_buffer("li", torch.tensor([i for i, _ in tril]), persistent=False)
            self.register_buffer("lj", torch.tensor([j for _, j in tril]), persistent=False)

        def forward(self, dense, *sparse):
            x = self.bottom(dense)
            feats = [x] + [table(sparse[2 * k], sparse[2 * k + 1]) for k, table in enumerate(self.tables)]
            t = torch.stack(feats, dim=1)                       # [batch, 5, 64]
            z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]  # pairwise dots, [batch, 10]
            return torch.sigmoid(self.top(torch.cat([x, z], dim=1)))

    torch.manual_seed(0)
    model = Dlrm().eval()
    for layer in list(model.bottom) + list(model.top):  # DLRM's initialisation of the MLPs
        if isinstance(layer, nn.Linear):
            fan_out, fan_in = layer.weight.shape
            nn.init.normal_(layer.weight, 0.0, math.sqrt(2.0 / (fan_in + fan_out)))
            nn.init.normal_(layer.bias, 0.0, math.sqrt(1.0 / fan_out))
    model.top[-1].weight.data.mul_(20.0)  # click probabilities spread over (0, 1), not all ~0.5
    for table, rows in zip(model.tables, DLRM_TABLES):
        nn.init.uniform_(table.weight, -1.0 / math.sqrt(rows), 1.0 / math.sqrt(rows))  # DLRM's init
        table.weight.data.mul_(30.0)  # so that the bags' dot products matter next to the MLP
    rng = np.random.default_rng(40)
    feeds = {"dense_features": np.log1p(rng.exponential(3.0, size=(DLRM_BAGS, dense_dim))).astype(F32)}
    dyn = {"dense_features": {0: "batch"}, "click_probability": {0: "batch"}}
    names = ["dense_features"]
    for k, rows in enumerate(DLRM_TABLES):
        lengths = rng.integers(1, 13, size=DLRM_BAGS)          # 1..12 lookups per bag
        lengths[:3] = [1, 12, 5]
        # Zipf-like skew: popular rows recur, as in click logs
        idx = np.minimum(rng.zipf(1.2, size=int(lengths.sum())) - 1, rows - 1).astype(I64)
        idx = (idx * 7919 + k) % rows                          # popular rows scattered over the table
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(I64)
        feeds[f"indices_{k}"], feeds[f"offsets_{k}"] = idx, offsets
        dyn[f"indices_{k}"] = {0: f"num_indices_{k}"}
        dyn[f"offsets_{k}"] = {0: "batch"}
        names += [f"indices_{k}", f"offsets_{k}"]
    export(model, tuple(torch.from_numpy(feeds[n]) for n in names), path, names,
           ["click_probability"], dyn, fold=fold)
    extra = {f"num_indices_{k}": int(len(feeds[f"indices_{k}"])) for k in range(len(DLRM_TABLES))}
    doc = (f"DLRM-like: bottom MLP 13-512-256-64, {len(DLRM_TABLES)} nn.EmbeddingBag(sum) tables "
           f"{DLRM_TABLES} x {emb} with offsets (bags of 1-12 lookups), dot interaction, "
           f"top MLP 74-512-256-1, {DLRM_BAGS} samples")
    # each table must matter: other rows in one table's bags move the output well past tolerance
    sensitivity = []
    for k, rows in enumerate(DLRM_TABLES):
        other = dict(feeds)
        other[f"indices_{k}"] = (feeds[f"indices_{k}"] + rows // 2) % rows
        sensitivity.append((f"table {k}", other))
    return feeds, torch_outputs(model, feeds, ["click_probability"]), \
        {"doc": doc, "dims": extra, "sensitivity": sensitivity}


# ----------------------------------------------------------------------------
# detector with post-processing
# ----------------------------------------------------------------------------

SSD_SCORE_TARGET = (10, 30)  # how many candidate scores the threshold should let through
SSD_CLS_LOGIT_STD = 1.2      # the classification logits' spread (random heads give ~0.45)
SSD_MIN_SCORE_MARGIN = 1e-3  # candidate scores at least this far from the threshold and each other
SSD_MIN_IOU_MARGIN = 2e-2    # every same-class IoU at least this far from the NMS threshold
SSD_FREQUENT_CLASS_BIAS = [1.5, 1.0, 0.5]  # logit bias of classes 1, 2, 3
SSD_SEEDS = 50               # head initialisations tried, in order, until one has those margins


def _ssd_candidates(model, x):
    """The post-processing's inputs as torchvision computes them: decoded, clipped boxes
    [anchors, 4], softmax scores and logits [anchors, classes] of image x."""
    torch = _torch()
    from torchvision.ops import boxes as box_ops
    with torch.no_grad():
        images, _ = model.transform(list(torch.from_numpy(x)))
        feats = list(model.backbone(images.tensors).values())
        head = model.head(feats)
        anchors = model.anchor_generator(images, feats)[0]
        boxes = model.box_coder.decode_single(head["bbox_regression"][0], anchors)
        boxes = box_ops.clip_boxes_to_image(boxes, images.image_sizes[0])
        scores = torch.softmax(head["cls_logits"][0], dim=-1)
    return boxes.numpy(), scores.numpy(), head["cls_logits"][0].numpy()


def _iou(a, b):
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area = lambda t: np.prod(np.clip(t[:, 2:] - t[:, :2], 0, None), axis=1)  # noqa: E731
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


def _ssd_stability(model, x):
    """Chooses the score threshold and measures how far every decision of the post-processing
    is from a tie: each candidate score against the threshold, the kept candidates' scores
    against each other (NMS order, output order), and each same-class IoU against the NMS
    threshold. The threshold goes in the middle of a gap between the lo-th and hi-th best
    foreground scores, the gap that leaves the largest margin."""
    boxes, scores, logits = _ssd_candidates(model, x)
    fg = scores[:, 1:]                                   # class 0 is the background
    flat = np.sort(fg.ravel())[::-1]
    lo, hi = SSD_SCORE_TARGET
    best = None
    for cut in range(lo - 1, hi):                        # cut + 1 candidates pass
        inner = float(np.min(flat[:cut] - flat[1:cut + 1]))
        margin = min(inner, float(flat[cut] - flat[cut + 1]) / 2)
        if best is None or margin > best[0]:
            best = (margin, cut)
    margin, cut = best
    threshold = float((flat[cut] + flat[cut + 1]) / 2)
    iou_margin, same_class_pairs = 1.0, 0
    anchor_idx, classes = np.nonzero(fg > threshold)
    torch = _torch()
    from torchvision.ops import boxes as box_ops
    kept = box_ops.batched_nms(torch.from_numpy(boxes[anchor_idx]), torch.from_numpy(fg[anchor_idx, classes]),
                               torch.from_numpy(classes), model.nms_thresh)
    for c in np.unique(classes):
        b = boxes[anchor_idx[classes == c]]
        if len(b) > 1:
            iou = _iou(b, b)[np.triu_indices(len(b), 1)]
            same_class_pairs += len(iou)
            iou_margin = min(iou_margin, float(np.min(np.abs(iou - model.nms_thresh))))
    return {"score_thresh": threshold, "candidates": cut + 1, "suppressed": cut + 1 - int(len(kept)),
            "min_score_margin": margin,
            "min_iou_margin": iou_margin, "same_class_pairs": same_class_pairs,
            "nms_thresh": float(model.nms_thresh), "max_per_class": int(np.max(np.bincount(classes))),
            "topk_candidates": model.topk_candidates, "detections_per_img": model.detections_per_img,
            "cls_logit_std": float(np.std(logits)), "top_score": float(flat[0])}


def build_ssdlite(path, fold):
    torch = _torch()
    import torchvision
    torch.manual_seed(0)
    num_classes = 91  # COCO's, background included
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                       num_classes=num_classes)
    gen = torch.Generator().manual_seed(1)

    def batch(m, step):
        images, _ = m.transform(list(torch.randn(4, 3, 320, 320, generator=gen)))
        m.head(list(m.backbone(images.tensors).values()))
    n_bn = recalibrate_batchnorm(model, batch)
    model.eval()
    x = _image(320, (1, 3, 320, 320))
    # A random classification head (torchvision: normal(0, 0.03), bias 0) gives logits of std
    # ~0.45: ~290k candidate scores packed so densely that thresholds, NMS order and the output
    # order all fall within float rounding of a tie. So the head's last convolutions are drawn
    # with a wider spread (logits std ~SSD_CLS_LOGIT_STD), the threshold is put in a wide gap of
    # the scores, and head seeds are tried in order until every decision has a margin and NMS
    # suppresses at least one candidate.
    _, _, logits = _ssd_candidates(model, x)
    std = 0.03 * SSD_CLS_LOGIT_STD / float(np.std(logits))
    tried = []
    for seed in range(SSD_SEEDS):
        g = torch.Generator().manual_seed(1000 + seed)
        with torch.no_grad():
            for seq in model.head.classification_head.module_list:
                seq[-1].weight.normal_(0.0, std, generator=g)
                # a few frequent classes (as "person" is in COCO), so that candidates of one
                # class overlap and NMS has something to suppress; channels are anchor-major
                bias = seq[-1].bias.view(-1, num_classes)
                bias.zero_()
                bias[:, 1:1 + len(SSD_FREQUENT_CLASS_BIAS)] = torch.tensor(SSD_FREQUENT_CLASS_BIAS)
        stability = _ssd_stability(model, x)
        tried.append((round(stability["min_score_margin"], 6), round(stability["min_iou_margin"], 4),
                      stability["suppressed"]))
        if stability["min_score_margin"] >= SSD_MIN_SCORE_MARGIN and \
                stability["min_iou_margin"] >= SSD_MIN_IOU_MARGIN and stability["suppressed"] > 0:
            break
    else:
        raise RuntimeError(f"ssdlite320: no head seed gives decisions far from ties: {tried}")
    stability["head_seed"] = 1000 + seed
    model.score_thresh = stability["score_thresh"]
    if stability["max_per_class"] >= model.topk_candidates or stability["candidates"] >= model.detections_per_img:
        raise RuntimeError(f"ssdlite320: a TopK cut would decide between candidates: {stability}")
    feeds = {"images": x}
    names = ["boxes", "scores", "labels"]
    export(model, (torch.from_numpy(x),), path, ["images"], names, None, fold=fold)
    with torch.no_grad():
        out = model(torch.from_numpy(x))[0]
    reference = {n: out[n].numpy() for n in names}
    # the detections' count is data-dependent: name that dim
    m = onnx.load(path)
    for vi in m.graph.output:
        vi.type.tensor_type.shape.dim[0].ClearField("dim_value")
        vi.type.tensor_type.shape.dim[0].dim_param = "num_detections"
    onnx.save(m, path)
    stability["detections"] = int(len(reference["scores"]))
    if stability["detections"] != stability["candidates"] - stability["suppressed"]:
        raise RuntimeError(f"ssdlite320: {stability['detections']} detections, expected "
                           f"{stability['candidates'] - stability['suppressed']}")
    doc = (f"torchvision ssdlite320_mobilenet_v3_large (weights=None, seed 0, {n_bn} BatchNorms with "
           f"estimated statistics, classification head seed {stability['head_seed']} with logits std "
           f"{stability['cls_logit_std']:.2f}), 1x3x320x320, with its post-processing: per-class "
           f"threshold (NonZero), TopK, batched NMS inside If; score_thresh "
           f"{stability['score_thresh']:.4f} lets {stability['candidates']} candidates through, NMS "
           f"suppresses {stability['suppressed']}: {stability['detections']} detections; every score >= {stability['min_score_margin']:.1e} "
           f"from the threshold and from each other, every same-class IoU >= "
           f"{stability['min_iou_margin']:.2f} from the NMS threshold")
    return feeds, reference, {"doc": doc, "stability": stability,
                              "required_ops": ["TopK", "NonZero", "NonMaxSuppression", "If"]}


def _check_ssd_against_unoptimised_ort(path, feeds, results, out_names):
    """ONNX Runtime without graph optimisations (other kernels, no fusions) must make the same
    decisions: same count, same labels, scores and boxes within 1e-4."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = ORT_THREADS
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    other = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"]).run(out_names, feeds)
    for name, a, b in zip(out_names, results, other):
        if a.shape != b.shape or (a.dtype.kind != "f" and not np.array_equal(a, b)) or \
                (a.dtype.kind == "f" and not np.allclose(a, b, rtol=1e-4, atol=1e-4)):
            raise RuntimeError(f"ssdlite320: unoptimised onnxruntime disagrees on {name}")


# ----------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------

def _both(builder):
    return {"fold": (builder, True), "nofold": (builder, False)}


MODELS = {
    "resnet18": (build_classifier("resnet18"), True),
    "mobilenet_v3_small": (build_classifier("mobilenet_v3_small"), True),
    "vit_2l": (build_classifier("vit_2l"), True),
    **{f"bert_{k}": v for k, v in _both(build_bert).items()},
    **{f"tenc_seqfirst_{k}": v for k, v in _both(build_tenc_seqfirst).items()},
    **{f"gpt_{k}": v for k, v in _both(build_gpt).items()},
    "dlrm_bags": (build_dlrm_bags, True),
    "ssdlite320": (build_ssdlite, True),
}
ALL = list(MODELS)
REQUIRED_OPS = {"dlrm_bags": ["Loop"]}
MAX_MB = 100


def _tensor_entry(model, name, arr, subdir, declared):
    return {"name": name, "file": f"{model}/{subdir}/{safe_filename(name)}.npy", "dtype": str(arr.dtype),
            "shape": list(arr.shape), "graph_shape": declared}


def _bind_dims(declared, arrays, dims):
    """The values the reference inputs give the symbolic dims (and check they agree)."""
    for name, shape in declared.items():
        if shape is None or name not in arrays:
            continue
        for d, size in zip(shape, arrays[name].shape):
            if isinstance(d, str):
                if dims.setdefault(d, int(size)) != int(size):
                    raise RuntimeError(f"dim {d} is {dims[d]} and {size}")
    return dims


def make_one(name, out_root):
    t0 = time.time()
    builder, fold = MODELS[name]
    mdir = os.path.join(out_root, name)
    if os.path.exists(mdir):
        shutil.rmtree(mdir)
    ensure_dir(mdir)
    path = os.path.join(mdir, "model.onnx")
    feeds, reference, meta = builder(path, fold)
    t_export = time.time() - t0

    onnx.checker.check_model(path, full_check=True)
    model = onnx.load(path, load_external_data=False)
    ops = sorted(collect_ops(model.graph))
    for op in meta.get("required_ops", []) + REQUIRED_OPS.get(name, []):
        if op not in ops:
            raise RuntimeError(f"{name}: the exported graph has no {op} (ops: {ops})")
    declared_in = {vi.name: graph_shape(vi) for vi in model.graph.input}
    declared_out = {vi.name: graph_shape(vi) for vi in model.graph.output}
    init_names = {t.name for t in model.graph.initializer}
    graph_inputs = [vi.name for vi in model.graph.input if vi.name not in init_names]
    if sorted(graph_inputs) != sorted(feeds):
        raise RuntimeError(f"{name}: graph inputs {graph_inputs} != feeds {sorted(feeds)}")

    sess = ort_session(path)
    out_names = [o.name for o in sess.get_outputs()]
    results = [np.asarray(r) for r in sess.run(out_names, feeds)]  # the warm-up is the reference
    times = []
    for _ in range(3):
        t = time.time()
        sess.run(out_names, feeds)
        times.append((time.time() - t) * 1e3)
    ort_ms = float(np.median(times))
    for label, other in meta.get("sensitivity", []):
        changed = max(float(np.max(np.abs(a - b))) for a, b in zip(results, sess.run(out_names, other)))
        scale = max(float(np.max(np.abs(a))) for a in results)
        if changed < 1e-2 * scale:
            raise RuntimeError(f"{name}: changing {label} moves the outputs by only {changed:.2g}")
    if name == "ssdlite320":
        _check_ssd_against_unoptimised_ort(path, feeds, results, out_names)

    ensure_dir(os.path.join(mdir, "inputs"))
    ensure_dir(os.path.join(mdir, "expected"))
    inputs, outputs, worst = [], [], 0.0
    for iname in graph_inputs:
        e = _tensor_entry(name, iname, feeds[iname], "inputs", declared_in[iname])
        np.save(os.path.join(out_root, e["file"]), feeds[iname])
        inputs.append(e)
    for oname, arr in zip(out_names, results):
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)):
                raise RuntimeError(f"{name}: output {oname} has non-finite values")
            if arr.size > 1 and float(np.std(arr)) < 1e-3 * max(1e-6, float(np.max(np.abs(arr)))):
                raise RuntimeError(f"{name}: output {oname} is (nearly) constant: a degenerate model")
        ref = reference[oname]
        if ref.shape != arr.shape:
            raise RuntimeError(f"{name}: onnxruntime gives {oname} shape {arr.shape}, torch {ref.shape}")
        if arr.dtype.kind == "f":
            # Tandem's own rule (README): rtol 1e-3, atol 1e-4 x max|reference|
            atol = 1e-4 * float(np.max(np.abs(ref))) if ref.size else 0.0
            err = float(np.max(np.abs(arr - ref))) if ref.size else 0.0
            if not np.allclose(arr, ref, rtol=1e-3, atol=atol):
                raise RuntimeError(f"{name}: onnxruntime and torch disagree on {oname} (max abs err {err})")
            worst = max(worst, err / max(1e-30, float(np.max(np.abs(ref)))))
        elif not np.array_equal(arr, ref.astype(arr.dtype)):
            raise RuntimeError(f"{name}: onnxruntime and torch disagree on {oname}")
        e = _tensor_entry(name, oname, arr, "expected", declared_out.get(oname))
        np.save(os.path.join(out_root, e["file"]), arr)
        outputs.append(e)

    dims = _bind_dims(declared_in, feeds, {})
    for k, v in meta.get("dims", {}).items():
        if dims.get(k, v) != v:
            raise RuntimeError(f"{name}: dim {k} bound to {dims[k]}, expected {v}")
    files = sorted(os.listdir(mdir))
    external = [f for f in files if f not in ("model.onnx", "inputs", "expected")]
    size = sum(os.path.getsize(os.path.join(mdir, f)) for f in files if os.path.isfile(os.path.join(mdir, f)))
    if size > MAX_MB * 1e6:
        raise RuntimeError(f"{name}: {size / 1e6:.0f} MB, over the tier's {MAX_MB} MB")
    entry = {
        "name": name,
        "path": f"{name}/model.onnx",
        "opset": default_opset(model),
        "ir_version": model.ir_version,
        "dims": dims,
        "inputs": inputs,
        "outputs": outputs,
        "source": "torch.onnx.export",
        "ops": ops,
        "external_data": external,
        "num_nodes": len(model.graph.node),
        "num_params": int(sum(int(np.prod(t.dims)) for t in model.graph.initializer)),
        "constant_folding": fold,
        "size_mb": round(size / 1e6, 1),
        "ort_ms": round(ort_ms, 2),
        "ort_vs_torch_max_rel_err": float(f"{worst:.3g}"),
        "doc": meta["doc"],
    }
    if "stability" in meta:
        entry["stability"] = meta["stability"]
    io = ", ".join(f"{i['name']}{i['shape']}" for i in inputs) + " -> " + \
        ", ".join(f"{o['name']}{o['shape']}" for o in outputs)
    print(f"make_real_zoo: {name:20s} {len(model.graph.node):5d} nodes {len(ops):2d} op types "
          f"{size / 1e6:6.1f} MB  ort {ort_ms:7.1f} ms  export {t_export:5.1f} s  "
          f"total {time.time() - t0:5.1f} s  {io}", flush=True)
    return entry


def main(argv=None):
    generator_main("make_real_zoo", __doc__, "zoo/real", ALL, make_one, argv)


if __name__ == "__main__":
    main()
