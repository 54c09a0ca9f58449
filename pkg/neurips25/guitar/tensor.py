"""t-SVD algebra and the rank surrogates of GUITAR (Sec. 3.2 of the paper).

A third-order tensor ``T`` of shape ``(n1, n2, n3)`` is handled through its DFT along the third mode,
``T_hat = fft(T, dim=2)``. The t-product, t-SVD and the tensor rank surrogates are all slice-wise
matrix operations on ``T_hat``. For a real tensor the slices come in conjugate pairs,
``T_hat[:, :, n3 - k] = conj(T_hat[:, :, k])``, so only the first ``n3 // 2 + 1`` are computed
(``torch.fft.rfft``) and ``irfft`` restores the rest — half the SVDs, and a real result by construction.
"""
from __future__ import annotations

import torch

__all__ = [
    "RANK_SURROGATES",
    "t_product",
    "t_transpose",
    "t_svd",
    "rank_surrogate",
    "rank_surrogate_grad",
    "shrink",
    "tensor_prox",
    "tensor_rank_penalty",
]

RANK_SURROGATES = ("nuclear", "ldelta", "hp_ldelta")


def _check_tensor(T, name: str = "T") -> torch.Tensor:
    if not isinstance(T, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(T).__name__}")
    if T.ndim != 3:
        raise ValueError(f"{name} must be a 3-way tensor (n1, n2, n3), got shape {tuple(T.shape)}")
    if T.is_complex() or not T.is_floating_point():
        raise TypeError(f"{name} must be a real floating tensor, got {T.dtype}")
    if not torch.isfinite(T).all():
        raise ValueError(f"{name} contains NaN or inf")
    return T


def _check_kind(kind: str, delta: float) -> None:
    if kind not in RANK_SURROGATES:
        raise ValueError(f"kind must be one of {RANK_SURROGATES}, got {kind!r}")
    if not (isinstance(delta, (int, float)) and delta > 0):
        raise ValueError(f"delta must be a positive number, got {delta!r}")


def t_product(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """The t-product ``A * B``: slice-wise matrix products in the Fourier domain, ``(n1,r,n3)*(r,n2,n3)``."""
    _check_tensor(A, "A")
    _check_tensor(B, "B")
    if A.shape[1] != B.shape[0] or A.shape[2] != B.shape[2]:
        raise ValueError(f"A (n1, r, n3) and B (r, n2, n3) must agree, got {tuple(A.shape)} and {tuple(B.shape)}")
    n3 = A.shape[2]
    Ah, Bh = torch.fft.rfft(A, dim=2), torch.fft.rfft(B, dim=2)
    Ch = torch.einsum("irk,rjk->ijk", Ah, Bh)
    return torch.fft.irfft(Ch, n=n3, dim=2)


def t_transpose(A: torch.Tensor) -> torch.Tensor:
    """Tensor transpose: transpose every frontal slice, then reverse slices 2..n3 (Kilmer & Martin)."""
    _check_tensor(A, "A")
    At = A.transpose(0, 1)
    return torch.cat([At[:, :, :1], At[:, :, 1:].flip(2)], dim=2)


def _slices_svd(T: torch.Tensor):
    """Batched economy SVD of the ``n3 // 2 + 1`` independent Fourier slices (batch first)."""
    Th = torch.fft.rfft(T, dim=2).permute(2, 0, 1)  # (n3//2+1, n1, n2)
    U, s, Vh = torch.linalg.svd(Th, full_matrices=False)
    return U, s, Vh


def _slice_weights(n3: int, n_half: int, dtype, device) -> torch.Tensor:
    """How often each rfft slice occurs among all n3 DFT slices (1 for DC and Nyquist, else 2)."""
    w = torch.full((n_half,), 2.0, dtype=dtype, device=device)
    w[0] = 1.0
    if n3 % 2 == 0:
        w[-1] = 1.0
    return w


def t_svd(T: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Economy t-SVD ``T = U * S * V^T`` with real ``U (n1,r,n3)``, f-diagonal ``S (r,r,n3)``, ``V (n2,r,n3)``."""
    _check_tensor(T)
    n3 = T.shape[2]
    U, s, Vh = _slices_svd(T)
    S = torch.diag_embed(s.to(U.dtype))
    back = lambda M: torch.fft.irfft(M.permute(1, 2, 0), n=n3, dim=2)  # noqa: E731
    return back(U), back(S), back(Vh.conj().transpose(1, 2))


def rank_surrogate(sigma: torch.Tensor, kind: str = "hp_ldelta", delta: float = 1e-2) -> torch.Tensor:
    """The penalty f(sigma) on one singular value.

    nuclear: ``sigma``; ldelta: ``(1+delta) sigma / (delta + sigma)``;
    hp_ldelta (high-preservation): ``(1+delta) tanh(sigma) / (delta + tanh(sigma))``.
    Both l-delta forms tend to the rank (count of non-zero sigma) as delta -> 0; ldelta saturates at
    1+delta, hp_ldelta at 1 (tanh -> 1), and much sooner.
    """
    _check_kind(kind, delta)
    if kind == "nuclear":
        return sigma
    g = sigma if kind == "ldelta" else torch.tanh(sigma)
    return (1 + delta) * g / (delta + g)


def rank_surrogate_grad(sigma: torch.Tensor, kind: str = "hp_ldelta", delta: float = 1e-2) -> torch.Tensor:
    """f'(sigma): the weight each singular value receives in the reweighted shrinkage."""
    _check_kind(kind, delta)
    if kind == "nuclear":
        return torch.ones_like(sigma)
    if kind == "ldelta":
        return delta * (1 + delta) / (delta + sigma) ** 2
    t = torch.tanh(sigma)
    return delta * (1 + delta) * (1 - t**2) / (delta + t) ** 2  # sech^2 = 1 - tanh^2


def shrink(sigma: torch.Tensor, tau: float, kind: str = "hp_ldelta", delta: float = 1e-2,
           max_iter: int = 100, tol: float = 1e-4) -> torch.Tensor:
    """Approximate prox of ``tau * f`` on singular values, ``argmin_x tau f(x) + (x - sigma)^2 / 2``.

    For the nuclear norm it is exact soft-thresholding ``max(sigma - tau, 0)``. For the concave
    surrogates we follow the paper's reweighting (a DC / majorise-minimise fixed point started at
    ``sigma``): ``x <- max(0, sigma - tau f'(x))``; large singular values get a tiny weight ``f'(x)``
    and are preserved, small ones a weight near ``(1+delta)/delta`` and are removed.
    """
    if not isinstance(sigma, torch.Tensor):
        raise TypeError(f"sigma must be a torch.Tensor, got {type(sigma).__name__}")
    if (sigma < 0).any():
        raise ValueError("sigma must be non-negative (singular values)")
    if not (isinstance(tau, (int, float)) and tau >= 0):
        raise ValueError(f"tau must be a non-negative number, got {tau!r}")
    _check_kind(kind, delta)
    if kind == "nuclear":
        return (sigma - tau).clamp_min(0)
    x = sigma
    for _ in range(max_iter):
        x_new = (sigma - tau * rank_surrogate_grad(x, kind, delta)).clamp_min(0)
        done = ((x_new - x) ** 2).sum() < tol
        x = x_new
        if done:
            break
    return x


def tensor_prox(T: torch.Tensor, tau: float, kind: str = "hp_ldelta", delta: float = 1e-2,
                return_penalty: bool = False):
    """``argmin_G tau ||G||_f + ||G - T||_F^2 / 2`` with ``||G||_f = (1/n3) sum_k sum_i f(sigma_i(G_hat_k))``.

    The 1/n3 is Parseval's: ``||G||_F^2 = (1/n3) sum_k ||G_hat_k||_F^2``, so the problem splits into
    one matrix prox per Fourier slice with the same ``tau``.

    Shrinks the singular values of every Fourier slice (the t-SVD) and transforms back; with
    ``kind="nuclear"`` this is the tensor singular value thresholding of the t-SVD nuclear norm.
    With ``return_penalty=True`` also returns ``||G||_f`` (free: the shrunk singular values are at hand).
    """
    _check_tensor(T)
    U, s, Vh = _slices_svd(T)
    s_new = shrink(s, tau, kind, delta)
    Gh = (U * s_new.to(U.dtype).unsqueeze(1)) @ Vh
    G = torch.fft.irfft(Gh.permute(1, 2, 0), n=T.shape[2], dim=2)
    if not return_penalty:
        return G
    w = _slice_weights(T.shape[2], s.shape[0], s.dtype, s.device)
    return G, (rank_surrogate(s_new, kind, delta).sum(1) * w).sum() / T.shape[2]


def tensor_rank_penalty(T: torch.Tensor, kind: str = "hp_ldelta", delta: float = 1e-2) -> torch.Tensor:
    """``||T||_f = (1/n3) sum_k sum_i f(sigma_i(T_hat_k))`` over all n3 Fourier slices (conjugate pairs
    counted twice); with ``kind="nuclear"`` the tensor nuclear norm of the t-SVD (Lu et al., 2020)."""
    _check_tensor(T)
    _, s, _ = _slices_svd(T)
    w = _slice_weights(T.shape[2], s.shape[0], s.dtype, s.device)
    return (rank_surrogate(s, kind, delta).sum(1) * w).sum() / T.shape[2]
