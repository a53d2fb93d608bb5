//! The fp8 reductions: every step in f32, one rounding to 8 bits at the end, in rank order, so
//! every rank gets identical bits and the result is as exact as f32 allows (rounding to 3 or 2
//! mantissa bits at every step, as a hop-by-hop fp8 reduction does, loses far more).
//!
//! Mesh (one-shot, LL or rounds), two-shot, reduce and reduce_scatter accumulate a tile at a
//! time in an f32 tile of scratch (`PLD_TILE_BYTES / 4` elements, so the f32 tile is one
//! staging tile). The ring carries partial sums between neighbours, so they must be f32 in
//! the window: its kernel widens the target into an f32 shadow window (`input_off`, allocated
//! by the runtime for the call), runs the f32 ring over it and narrows the result once.

use pld_model::{DType, ReduceOp};

use crate::builtins::{combine, ring_fn_name};

/// `pld_f8e4m3_to_f32` / `pld_f32_to_f8e4m3` (and e5m2): the header's exact widening and
/// round-to-nearest-even narrowing.
fn conversions(dtype: DType) -> (String, String) {
    (format!("pld_{dtype}_to_f32"), format!("pld_f32_to_{dtype}"))
}

/// The op-independent helpers of an fp8 dtype: widen `n` elements into f32, narrow back.
pub(crate) fn conversion_helpers(dtype: DType) -> String {
    let (to_f, from_f) = conversions(dtype);
    format!(
        r#"PLD_VECTOR_CLONES static void pld_widen_{dtype}(float *restrict acc, const uint8_t *restrict src, uint64_t n) {{
    for (uint64_t i = 0; i < n; ++i) acc[i] = {to_f}(src[i]);
}}

/* Rounds once; `divisor` (op = avg, else 0) divides first, in f32, so an average rounds once too. */
PLD_VECTOR_CLONES static void pld_narrow_{dtype}(uint8_t *restrict out, const float *restrict acc, uint64_t n,
                                                 uint64_t divisor) {{
    if (divisor > 1) {{
        const float d = (float)divisor;
        for (uint64_t i = 0; i < n; ++i) out[i] = {from_f}(acc[i] / d);
    }} else {{
        for (uint64_t i = 0; i < n; ++i) out[i] = {from_f}(acc[i]);
    }}
}}

"#
    )
}

/// `acc = a op b` and `acc = acc op src` with fp8 operands and an f32 accumulator, then the
/// tile reductions of the mesh kernels built on them.
pub(crate) fn reduction_helpers(op: ReduceOp, dtype: DType) -> String {
    let (to_f, _) = conversions(dtype);
    let first = combine(op, DType::F32, &format!("{to_f}(a[i])"), &format!("{to_f}(b[i])"));
    let next = combine(op, DType::F32, "x", &format!("{to_f}(src[i])"));
    format!(
        r#"PLD_VECTOR_CLONES static void pld_wide2_{op}_{dtype}(float *restrict acc, const uint8_t *restrict a,
                                                  const uint8_t *restrict b, uint64_t n) {{
    for (uint64_t i = 0; i < n; ++i) acc[i] = {first};
}}

PLD_VECTOR_CLONES static void pld_wide_{op}_{dtype}(float *restrict acc, const uint8_t *restrict src, uint64_t n) {{
    for (uint64_t i = 0; i < n; ++i) {{
        const float x = acc[i];
        acc[i] = {next};
    }}
}}

/* Elements [off, off + m) of every rank (m at most PLD_TILE_BYTES / 4) reduced in rank order in
 * f32 (the tile `wide`), rounded once into `out` (divided by `divisor` first, see pld_narrow).
 * Two staging tiles for transport peers. */
static inline int32_t pld_reduce_all_{op}_{dtype}(pld_ctx *c, uint64_t off, uint64_t m, uint8_t *out, float *wide,
                                               uint8_t *staging, uint64_t divisor) {{
    const void *x, *y;
    PLD_TRY(pld_remote_load(c, 0, off, m, staging, &x));
    PLD_TRY(pld_remote_load(c, 1, off, m, staging + PLD_TILE_BYTES, &y));
    pld_wide2_{op}_{dtype}(wide, (const uint8_t *)x, (const uint8_t *)y, m);
    for (int32_t p = 2; p < c->nranks; ++p) {{
        PLD_TRY(pld_remote_load(c, p, off, m, staging, &x));
        pld_wide_{op}_{dtype}(wide, (const uint8_t *)x, m);
    }}
    pld_narrow_{dtype}(out, wide, m, divisor);
    return PLD_OK;
}}

/* The same with this rank's own tile read in place and overwritten with the result. */
static inline int32_t pld_reduce_into_{op}_{dtype}(pld_ctx *c, uint64_t off, uint64_t m, uint8_t *mine, float *wide,
                                                uint8_t *staging, uint64_t divisor) {{
    const void *x, *y;
    if (c->rank == 0) x = mine; else PLD_TRY(pld_remote_load(c, 0, off, m, staging, &x));
    if (c->rank == 1) y = mine; else PLD_TRY(pld_remote_load(c, 1, off, m, staging + PLD_TILE_BYTES, &y));
    pld_wide2_{op}_{dtype}(wide, (const uint8_t *)x, (const uint8_t *)y, m);
    for (int32_t p = 2; p < c->nranks; ++p) {{
        if (p == c->rank) x = mine; else PLD_TRY(pld_remote_load(c, p, off, m, staging, &x));
        pld_wide_{op}_{dtype}(wide, (const uint8_t *)x, m);
    }}
    pld_narrow_{dtype}(mine, wide, m, divisor);
    return PLD_OK;
}}

"#
    )
}

/// The LL form shared by mesh and reduce: every rank's message (this rank's own `target`) in
/// rank order into the f32 `wide` (at least 4 * n bytes of scratch), rounded once into `target`.
fn ll_rank_order(op: ReduceOp, dtype: DType) -> String {
    format!(
        r#"        const void *x, *y;
#define PLD_LL_OPERAND(p, out) \
    do {{ if ((p) == r) *(out) = target; else PLD_TRY(pld_ll_receive(c, a, (p), (out))); }} while (0)
        PLD_LL_OPERAND(0, &x);
        PLD_LL_OPERAND(1, &y);
        pld_wide2_{op}_{dtype}(wide, (const uint8_t *)x, (const uint8_t *)y, n);
        for (int32_t p = 2; p < w; ++p) {{
            PLD_LL_OPERAND(p, &x);
            pld_wide_{op}_{dtype}(wide, (const uint8_t *)x, n);
        }}
#undef PLD_LL_OPERAND
        pld_narrow_{dtype}(target, wide, n, a->divisor);
"#
    )
}

/// One-shot all_reduce of fp8 (see the f32 form in `builtins`): scratch holds the result
/// (`count` bytes), then the f32 tile, then two staging tiles; the LL form needs 4 bytes of
/// scratch per element.
pub(crate) fn all_reduce_mesh(op: ReduceOp, dtype: DType) -> String {
    let ll = ll_rank_order(op, dtype);
    format!(
        r#"    const int32_t w = c->nranks, r = c->rank;
    const uint64_t n = a->count;
    if (w == 1) return PLD_OK;
    if (!pld_in_window(c, a->target_off, n)) return PLD_OUT_OF_BOUNDS;
    uint8_t *target = c->local_base + a->target_off;
    if (pld_ll_fits(c, a, n)) {{
        if (c->scratch_bytes < 4 * n) return PLD_OUT_OF_BOUNDS;
        float *wide = (float *)c->scratch;
        PLD_TRY(pld_ll_send(c, a, target, n));
{ll}        return PLD_OK;
    }}
    if (c->scratch_bytes < n + 3 * PLD_TILE_BYTES) return PLD_OUT_OF_BOUNDS;
    uint8_t *acc = c->scratch;
    float *wide = (float *)(c->scratch + n);
    uint8_t *staging = c->scratch + n + PLD_TILE_BYTES;
    const uint64_t tile = PLD_TILE_BYTES / sizeof(float);
    PLD_TRY(pld_ready_round(c, a));
    for (uint64_t i = 0; i < n; i += tile) {{
        const uint64_t m = n - i < tile ? n - i : tile;
        PLD_TRY(pld_reduce_all_{op}_{dtype}(c, a->target_off + i, m, acc + i, wide, staging, a->divisor));
    }}
    PLD_TRY(pld_round_all(c, a, 2));
    memcpy(target, acc, n);
    return pld_settle_all(c, a, 2);
"#
    )
}

/// Reduce to the root, fp8: the root's LL form as mesh's; the rounds form reduces a tile at a
/// time into the f32 tile (scratch: the f32 tile, two staging tiles, the rounded tile).
pub(crate) fn reduce(op: ReduceOp, dtype: DType) -> String {
    let ll = ll_rank_order(op, dtype);
    format!(
        r#"    const int32_t w = c->nranks, r = c->rank, root = a->root;
    const uint64_t n = a->count;
    if (w == 1) return PLD_OK;
    if (root < 0 || root >= w) return PLD_OUT_OF_BOUNDS;
    if (!pld_in_window(c, a->target_off, n)) return PLD_OUT_OF_BOUNDS;
    uint8_t *target = c->local_base + a->target_off;
    if (pld_ll_fits(c, a, n)) {{
        PLD_TRY(pld_publish(c, a));
        if (r != root) return pld_ll_send_to(c, a, root, target, n);
        if (c->scratch_bytes < 4 * n) return PLD_OUT_OF_BOUNDS;
        float *wide = (float *)c->scratch;
{ll}        pld_ll_look_ahead_all(c, a, root, n);
        return PLD_OK;
    }}
    if (r != root) return pld_collect_peer(c, a);
    if (c->scratch_bytes < 4 * PLD_TILE_BYTES) return PLD_OUT_OF_BOUNDS;
    float *wide = (float *)c->scratch;
    uint8_t *staging = c->scratch + PLD_TILE_BYTES, *acc = c->scratch + 3 * PLD_TILE_BYTES;
    const uint64_t tile = PLD_TILE_BYTES / sizeof(float);
    PLD_TRY(pld_collect_ready(c, a));
    for (uint64_t i = 0; i < n; i += tile) {{
        const uint64_t m = n - i < tile ? n - i : tile;
        PLD_TRY(pld_reduce_all_{op}_{dtype}(c, a->target_off + i, m, acc, wide, staging, a->divisor));
        memcpy(target + i, acc, m);
    }}
    return pld_collect_done(c, a);
"#
    )
}

/// reduce_scatter of fp8: this rank's row, then the next ranks' around the ring (the order of
/// the other dtypes), in f32, rounded once. The rounds form goes tile by tile over all peers
/// (scratch: the f32 tile and a staging tile); the LL form needs 4 bytes per element.
pub(crate) fn reduce_scatter(op: ReduceOp, dtype: DType) -> String {
    format!(
        r#"    const int32_t w = c->nranks;
    const uint64_t n = a->count, row = n;
    if (w == 1) return PLD_OK;
    if (!pld_in_window(c, a->target_off, row * (uint64_t)w)) return PLD_OUT_OF_BOUNDS;
    const uint64_t mine_off = a->target_off + row * (uint64_t)c->rank;
    uint8_t *mine = c->local_base + mine_off;
    if (pld_ll_rows(c, a, row)) {{
        if (c->scratch_bytes < 4 * n) return PLD_OUT_OF_BOUNDS;
        float *wide = (float *)c->scratch;
        PLD_TRY(pld_ll_send_rows(c, a, c->local_base + a->target_off, row));
        pld_widen_{dtype}(wide, mine, n);
        for (int32_t i = 1; i < w; ++i) {{
            const void *src;
            PLD_TRY(pld_ll_receive(c, a, (c->rank + i) % w, &src));
            pld_wide_{op}_{dtype}(wide, (const uint8_t *)src, n);
        }}
        pld_narrow_{dtype}(mine, wide, n, a->divisor);
        return PLD_OK;
    }}
    if (c->scratch_bytes < 2 * PLD_TILE_BYTES) return PLD_OUT_OF_BOUNDS;
    float *wide = (float *)c->scratch;
    uint8_t *staging = c->scratch + PLD_TILE_BYTES;
    const uint64_t tile = PLD_TILE_BYTES / sizeof(float);
    PLD_TRY(pld_ready_round(c, a));
    for (uint64_t j = 0; j < n; j += tile) {{
        const uint64_t m = n - j < tile ? n - j : tile;
        pld_widen_{dtype}(wide, mine + j, m);
        for (int32_t i = 1; i < w; ++i) {{
            const void *src;
            PLD_TRY(pld_remote_load(c, (c->rank + i) % w, mine_off + j, m, staging, &src));
            pld_wide_{op}_{dtype}(wide, (const uint8_t *)src, m);
        }}
        pld_narrow_{dtype}(mine + j, wide, m, a->divisor);
    }}
    PLD_TRY(pld_round_all(c, a, 2));
    return pld_settle_all(c, a, 2);
"#
    )
}

/// Ring all_reduce of fp8: the f32 ring over the shadow at `input_off` (4 bytes per element,
/// allocated by the runtime for this call), between one widening and one narrowing. Peers
/// read the shadow only after the ring's ready round, which follows the widening, and the
/// ring's closing round comes before the narrowing, so each is ordered with every peer.
pub(crate) fn all_reduce_ring(op: ReduceOp, dtype: DType) -> String {
    let ring = ring_fn_name(op, DType::F32);
    format!(
        r#"    const uint64_t n = a->count;
    if (c->nranks == 1) return PLD_OK;
    if (!pld_in_window(c, a->target_off, n) || a->input_off % 4 != 0 || !pld_in_window(c, a->input_off, 4 * n))
        return PLD_OUT_OF_BOUNDS;
    uint8_t *target = c->local_base + a->target_off;
    float *shadow = (float *)(c->local_base + a->input_off);
    pld_widen_{dtype}(shadow, target, n);
    PLD_TRY({ring}(c, a, a->input_off));
    pld_narrow_{dtype}(target, shadow, n, a->divisor);
    return PLD_OK;
"#
    )
}
