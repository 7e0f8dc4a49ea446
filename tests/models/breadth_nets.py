"""Torch definitions of the breadth benchmark models (issue 16): YOLOv8n, a CRNN, ViT-Tiny, a Whisper-tiny audio
encoder and MobileNetV3-small, written from their published layouts (random weights; export.py seeds them)."""
import math

import torch
from torch import nn
from torch.nn import functional as F


# ------------------------------------------------------------------------------------------------- YOLOv8n
class ConvBNSiLU(nn.Module):
    def __init__(self, cin, cout, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.03)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut):
        super().__init__()
        self.cv1, self.cv2, self.add = ConvBNSiLU(c, c, 3), ConvBNSiLU(c, c, 3), shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """CSP bottleneck with two convolutions: split in halves, n bottlenecks on the second, concat every stage."""

    def __init__(self, cin, cout, n, shortcut):
        super().__init__()
        self.c = cout // 2
        self.cv1 = ConvBNSiLU(cin, 2 * self.c)
        self.cv2 = ConvBNSiLU((2 + n) * self.c, cout)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.cv1, self.cv2 = ConvBNSiLU(cin, cin // 2), ConvBNSiLU(cin // 2 * 4, cout)
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class Detect(nn.Module):
    """Anchor-free head: per level a box branch (4 × 16-bin distributions, DFL) and a class branch; decoded to
    (batch, 4 + classes, anchors) boxes in input pixels, as ultralytics exports it."""

    def __init__(self, nc, ch, strides=(8, 16, 32), reg_max=16):
        super().__init__()
        self.nc, self.reg_max, self.strides = nc, reg_max, strides
        c2, c3 = max(16, ch[0] // 4, reg_max * 4), max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(ConvBNSiLU(c, c2, 3), ConvBNSiLU(c2, c2, 3),
                                               nn.Conv2d(c2, 4 * reg_max, 1)) for c in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(ConvBNSiLU(c, c3, 3), ConvBNSiLU(c3, c3, 3), nn.Conv2d(c3, nc, 1))
                                 for c in ch)
        self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
        self.dfl.weight.data[:] = torch.arange(reg_max, dtype=torch.float32).view(1, reg_max, 1, 1)

    def forward(self, xs):
        b = xs[0].shape[0]
        outs, anchors, strides = [], [], []
        for i, x in enumerate(xs):
            h, w = x.shape[2], x.shape[3]
            outs.append(torch.cat((self.cv2[i](x), self.cv3[i](x)), 1).view(b, 4 * self.reg_max + self.nc, -1))
            sx = torch.arange(w, dtype=torch.float32) + 0.5
            sy = torch.arange(h, dtype=torch.float32) + 0.5
            gy, gx = torch.meshgrid(sy, sx, indexing="ij")
            anchors.append(torch.stack((gx, gy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), float(self.strides[i])))
        anchors = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
        stride = torch.cat(strides).transpose(0, 1).unsqueeze(0)
        box, cls = torch.cat(outs, 2).split((4 * self.reg_max, self.nc), 1)
        a = box.shape[2]
        dist = self.dfl(box.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(b, 4, a)
        lt, rb = dist.chunk(2, 1)
        x1y1, x2y2 = anchors - lt, anchors + rb
        xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1)
        return torch.cat((xywh * stride, cls.sigmoid()), 1)


class YOLOv8n(nn.Module):
    """ultralytics yolov8n.yaml at width 0.25 / depth 0.33 (3.2 M parameters), 80 classes."""

    def __init__(self, nc=80):
        super().__init__()
        self.b0, self.b1 = ConvBNSiLU(3, 16, 3, 2), ConvBNSiLU(16, 32, 3, 2)
        self.b2, self.b3 = C2f(32, 32, 1, True), ConvBNSiLU(32, 64, 3, 2)
        self.b4, self.b5 = C2f(64, 64, 2, True), ConvBNSiLU(64, 128, 3, 2)
        self.b6, self.b7 = C2f(128, 128, 2, True), ConvBNSiLU(128, 256, 3, 2)
        self.b8, self.b9 = C2f(256, 256, 1, True), SPPF(256, 256)
        self.h12, self.h15 = C2f(384, 128, 1, False), C2f(192, 64, 1, False)
        self.h16, self.h18 = ConvBNSiLU(64, 64, 3, 2), C2f(192, 128, 1, False)
        self.h19, self.h21 = ConvBNSiLU(128, 128, 3, 2), C2f(384, 256, 1, False)
        self.detect = Detect(nc, (64, 128, 256))

    def forward(self, x):
        p3 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        up = F.interpolate(p5, scale_factor=2.0, mode="nearest")
        h12 = self.h12(torch.cat((up, p4), 1))
        out3 = self.h15(torch.cat((F.interpolate(h12, scale_factor=2.0, mode="nearest"), p3), 1))
        out4 = self.h18(torch.cat((self.h16(out3), h12), 1))
        out5 = self.h21(torch.cat((self.h19(out4), p5), 1))
        return self.detect([out3, out4, out5])


# ------------------------------------------------------------------------------------------------------ CRNN
class CRNN(nn.Module):
    """Text-line recognizer (Shi et al.): a VGG-style conv stack to height 1, two bidirectional LSTM layers over the
    columns, a linear CTC head with log-softmax; input (batch, 1, 32, width), output (width / 4, batch, classes)."""

    def __init__(self, classes=97, hidden=128):
        super().__init__()

        def block(cin, cout, bn=False):
            return [nn.Conv2d(cin, cout, 3, 1, 1, bias=not bn)] + ([nn.BatchNorm2d(cout)] if bn else []) + [nn.ReLU()]

        self.cnn = nn.Sequential(*block(1, 64), nn.MaxPool2d(2, 2), *block(64, 128), nn.MaxPool2d(2, 2),
                                 *block(128, 256, True), *block(256, 256), nn.MaxPool2d((2, 1), (2, 1)),
                                 *block(256, 256, True), *block(256, 256), nn.MaxPool2d((2, 1), (2, 1)),
                                 nn.Conv2d(256, 256, (2, 1), bias=False), nn.BatchNorm2d(256), nn.ReLU())
        self.rnn = nn.LSTM(256, hidden, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        f = self.cnn(x).squeeze(2).permute(2, 0, 1)  # (T, batch, channels)
        y, _ = self.rnn(f)
        return self.fc(y).log_softmax(-1)


# -------------------------------------------------------------------------------------- transformer blocks
class PreLNBlock(nn.Module):
    """x + attn(ln(x)); x + mlp(ln(x)) with fused qkv, as timm's ViT and Whisper's encoder lay it out."""

    def __init__(self, dim, heads, mlp, eps, k_bias=True):
        super().__init__()
        self.heads, self.dh = heads, dim // heads
        self.ln1, self.ln2 = nn.LayerNorm(dim, eps=eps), nn.LayerNorm(dim, eps=eps)
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim, bias=k_bias), nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, mlp), nn.Linear(mlp, dim)

    def forward(self, x):
        b, n, d = x.shape
        h = self.ln1(x)

        def split(t):
            return t.view(b, n, self.heads, self.dh).transpose(1, 2)

        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * (self.dh ** -0.5), dim=-1)
        x = x + self.proj(torch.matmul(att, v).transpose(1, 2).reshape(b, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    """ViT-Tiny/16 (DeiT-Tiny's size: dim 192, 12 blocks, 3 heads, MLP 768) at 224×224, class-token head."""

    def __init__(self, image=224, patch=16, dim=192, depth=12, heads=3, mlp=768, classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(PreLNBlock(dim, heads, mlp, 1e-6) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), 1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x)[:, 0])


class WhisperEncoder(nn.Module):
    """Whisper-tiny's audio encoder: two GELU conv1d over 80 log-mel bins (the second halving time), sinusoidal
    positions, 4 pre-LN blocks (dim 384, 6 heads, MLP 1536; key projection without bias), final LayerNorm."""

    def __init__(self, mels=80, dim=384, depth=4, heads=6, max_frames=1500):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, dim, 3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        inv = torch.exp(-math.log(10000) / (dim // 2 - 1) * torch.arange(dim // 2))
        t = torch.arange(max_frames)[:, None] * inv[None, :]
        self.register_buffer("pos", torch.cat((torch.sin(t), torch.cos(t)), 1))
        self.blocks = nn.ModuleList(PreLNBlock(dim, heads, 4 * dim, 1e-5, k_bias=False) for _ in range(depth))
        self.ln_post = nn.LayerNorm(dim)

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)
        x = x + self.pos[: x.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.ln_post(x)


# ------------------------------------------------------------------------------------------ MobileNetV3-small
def _divisible(v, d=8):
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


class InvertedResidual(nn.Module):
    def __init__(self, cin, k, exp, cout, se, hs, stride):
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        layers = []
        if exp != cin:
            layers += [nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp, eps=1e-3), act()]
        layers += [nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False), nn.BatchNorm2d(exp, eps=1e-3),
                   act()]
        self.body = nn.Sequential(*layers)
        self.se = None
        if se:
            sq = _divisible(exp // 4)
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(exp, sq, 1), nn.ReLU(), nn.Conv2d(sq, exp, 1),
                                    nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout, eps=1e-3))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        if self.se is not None:
            y = y * self.se(y)
        y = self.project(y)
        return x + y if self.residual else y


class MobileNetV3Small(nn.Module):
    """torchvision's mobilenet_v3_small layout (2.5 M parameters), 1000 classes."""

    CFG = ((3, 16, 16, True, False, 2), (3, 72, 24, False, False, 2), (3, 88, 24, False, False, 1),
           (5, 96, 40, True, True, 2), (5, 240, 40, True, True, 1), (5, 240, 40, True, True, 1),
           (5, 120, 48, True, True, 1), (5, 144, 48, True, True, 1), (5, 288, 96, True, True, 2),
           (5, 576, 96, True, True, 1), (5, 576, 96, True, True, 1))

    def __init__(self, classes=1000):
        super().__init__()
        layers, cin = [nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16, eps=1e-3), nn.Hardswish()], 16
        for k, exp, cout, se, hs, s in self.CFG:
            layers.append(InvertedResidual(cin, k, exp, cout, se, hs, s))
            cin = cout
        layers += [nn.Conv2d(96, 576, 1, bias=False), nn.BatchNorm2d(576, eps=1e-3), nn.Hardswish()]
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1024, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))
