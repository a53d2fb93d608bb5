//! C generation of the builtin collective kernels, one function per
//! [`KernelVariant`](pld_model::KernelVariant).
//!
//! Every kernel follows the credit protocol of the ABI header (`pld_round_all`, `pld_settle_all`)
//! and leaves its signal all zero. Reading peers goes through `pld_remote_load` / `pld_get`, so
//! the same code serves addressable peers (threads, shared memory) and transport-only peers.

use std::fmt::Write;

use pld_model::{DType, KernelKind, KernelVariant, ReduceOp};

use crate::{DeviceSource, wide};

/// The builtin collective library: every variant of [`KernelVariant::all`].
pub fn builtin_source() -> DeviceSource {
    let mut c = String::from(LL_ROWS);
    c.push_str(COUNT_CHECK);
    c.push_str(ROOT_COLLECT);
    for dtype in DType::ALL.into_iter().filter(|d| d.is_fp8()) {
        c.push_str(&wide::conversion_helpers(dtype));
    }
    for op in ReduceOp::COMBINING {
        for dtype in DType::ALL {
            if dtype.is_fp8() {
                // Accumulated in f32 (crate::wide); the ring runs f32's ring function.
                c.push_str(&wide::reduction_helpers(op, dtype));
                continue;
            }
            c.push_str(&reduce_helper(op, dtype));
            c.push_str(&reduce2_helper(op, dtype));
            c.push_str(&reduce_rev_helper(op, dtype));
            c.push_str(&reduce_tile(op, dtype));
            c.push_str(&reduce_tile_in_place(op, dtype));
            c.push_str(&ring_fn(op, dtype));
        }
    }
    for variant in KernelVariant::all() {
        c.push_str(&builtin_kernel(variant));
    }
    DeviceSource::new(c)
}

/// The C storage type of a dtype (f16, bf16 and the fp8 types are stored as their bits).
pub(crate) fn storage_type(dtype: DType) -> &'static str {
    match dtype {
        DType::I8 => "int8_t",
        DType::U8 | DType::F8E4M3 | DType::F8E5M2 => "uint8_t",
        DType::I32 => "int32_t",
        DType::U32 => "uint32_t",
        DType::I64 => "int64_t",
        DType::U64 => "uint64_t",
        DType::F16 | DType::BF16 => "uint16_t",
        DType::F32 => "float",
        DType::F64 => "double",
    }
}

/// The unsigned type signed integers wrap through (signed overflow is undefined in C).
fn wrapping_type(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::I8 => Some("uint8_t"),
        DType::I32 => Some("uint32_t"),
        DType::I64 => Some("uint64_t"),
        _ => None,
    }
}

/// `a op b` over values of the compute type.
pub(crate) fn combine(op: ReduceOp, dtype: DType, a: &str, b: &str) -> String {
    match (op, wrapping_type(dtype)) {
        (ReduceOp::Sum, Some(u)) => {
            format!("({ty})(({u}){a} + ({u}){b})", ty = storage_type(dtype))
        }
        (ReduceOp::Prod, Some(u)) => {
            format!("({ty})(({u}){a} * ({u}){b})", ty = storage_type(dtype))
        }
        (ReduceOp::Sum, None) => format!("{a} + {b}"),
        (ReduceOp::Prod, None) => format!("{a} * {b}"),
        // `a != a` is NaN: a NaN on either side wins, whatever the order of reduction.
        (ReduceOp::Max, _) if dtype.is_float() => format!("(({a} > {b} || {a} != {a}) ? {a} : {b})"),
        (ReduceOp::Min, _) if dtype.is_float() => format!("(({a} < {b} || {a} != {a}) ? {a} : {b})"),
        (ReduceOp::Max, _) => format!("({a} > {b} ? {a} : {b})"),
        (ReduceOp::Min, _) => format!("({a} < {b} ? {a} : {b})"),
        (ReduceOp::Avg | ReduceOp::PremulSum, _) => unreachable!("{op} runs sum's kernel (ReduceOp::kernel_op)"),
    }
}

fn reduce2_helper_name(op: ReduceOp, dtype: DType) -> String {
    format!("pld_reduce2_{op}_{dtype}")
}

fn reduce_helper_name(op: ReduceOp, dtype: DType) -> String {
    format!("pld_reduce_{op}_{dtype}")
}

/// `out[i] = a[i] op b[i]`: the first step of a reduction, in one pass instead of copy + reduce.
fn reduce2_helper(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let params = format!("{ty} *restrict out, const {ty} *restrict a, const {ty} *restrict b");
    elementwise(&reduce2_helper_name(op, dtype), &params, op, dtype, "out[i]", "a[i]", "b[i]")
}

fn reduce_rev_helper_name(op: ReduceOp, dtype: DType) -> String {
    format!("pld_reduce_rev_{op}_{dtype}")
}

/// `acc[i] = src[i] op acc[i]`: `src` comes first in rank order.
fn reduce_rev_helper(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let params = format!("{ty} *restrict acc, const {ty} *restrict src");
    elementwise(&reduce_rev_helper_name(op, dtype), &params, op, dtype, "acc[i]", "src[i]", "acc[i]")
}

/// `acc[i] = acc[i] op src[i]`.
fn reduce_helper(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let params = format!("{ty} *restrict acc, const {ty} *restrict src");
    elementwise(&reduce_helper_name(op, dtype), &params, op, dtype, "acc[i]", "acc[i]", "src[i]")
}

/// A loop over `n` elements storing `lhs op rhs` into `dst`; f16/bf16 combine in float.
fn elementwise(name: &str, params: &str, op: ReduceOp, dtype: DType, dst: &str, lhs: &str, rhs: &str) -> String {
    let ty = storage_type(dtype);
    let body = match dtype {
        DType::F16 | DType::BF16 => {
            let (to_f, from_f) = if dtype == DType::F16 {
                ("pld_f16_to_f32", "pld_f32_to_f16")
            } else {
                ("pld_bf16_to_f32", "pld_f32_to_bf16")
            };
            format!(
                "        float x = {to_f}({lhs}), y = {to_f}({rhs});\n        {dst} = {from_f}({});\n",
                combine(op, DType::F32, "x", "y")
            )
        }
        _ => format!("        {ty} x = {lhs}, y = {rhs};\n        {dst} = {};\n", combine(op, dtype, "x", "y")),
    };
    format!(
        "PLD_VECTOR_CLONES static void {name}({params}, uint64_t n) {{\n    for (uint64_t i = 0; i < n; ++i) {{\n{body}    }}\n}}\n\n"
    )
}

/// The C of one builtin kernel variant (its reduction helpers and the `pld_ll_rows` policy are
/// part of [`builtin_source`]).
pub fn builtin_kernel(variant: KernelVariant) -> String {
    let symbol = variant.symbol();
    let body = match (variant.kind, variant.reduction) {
        (KernelKind::AllReduceMesh, Some((op, dtype))) if dtype.is_fp8() => wide::all_reduce_mesh(op, dtype),
        (KernelKind::AllReduceRing, Some((op, dtype))) if dtype.is_fp8() => wide::all_reduce_ring(op, dtype),
        (KernelKind::ReduceScatter, Some((op, dtype))) if dtype.is_fp8() => wide::reduce_scatter(op, dtype),
        (KernelKind::Reduce, Some((op, dtype))) if dtype.is_fp8() => wide::reduce(op, dtype),
        (KernelKind::AllReduceMesh, Some((op, dtype))) => all_reduce_mesh(op, dtype),
        (KernelKind::AllReduceTwoShot, Some((op, dtype))) => all_reduce_two_shot(op, dtype),
        (KernelKind::AllReduceRing, Some((op, dtype))) => {
            format!("    return {}(c, a, a->target_off);\n", ring_fn_name(op, dtype))
        }
        (KernelKind::ReduceScatter, Some((op, dtype))) => reduce_scatter(op, dtype),
        (KernelKind::Broadcast, None) => BROADCAST.to_owned(),
        (KernelKind::AllGather, None) => ALL_GATHER.to_owned(),
        (KernelKind::AllToAll, None) => ALL_TO_ALL.to_owned(),
        (KernelKind::AllToAllV, None) => ALL_TO_ALL_V.to_owned(),
        (KernelKind::Barrier, None) => BARRIER.to_owned(),
        (KernelKind::Reduce, Some((op, dtype))) => reduce(op, dtype),
        (KernelKind::Gather, None) => GATHER.to_owned(),
        (KernelKind::Scatter, None) => SCATTER.to_owned(),
        (KernelKind::AllGatherV, None) => ALL_GATHER_V.to_owned(),
        (KernelKind::SendRecv, None) => SEND_RECV.to_owned(),
        (kind, reduction) => unreachable!("no kernel for {kind:?} with {reduction:?}"),
    };
    // No flush of the LL wakes here: the runtime calls the binary's `pld_end_call` after
    // every kernel that left one due (errors included), which costs a call at one rank nothing.
    let mut c = String::new();
    let _ = writeln!(c, "int32_t {symbol}(pld_ctx *c, const void *args) {{");
    if variant.kind != KernelKind::SendRecv {
        let _ = writeln!(c, "    const pld_coll_args *a = (const pld_coll_args *)args;");
    }
    c.push_str(&body);
    c.push_str("}\n\n");
    c
}

/// The reduction of elements `[first, first + m)` of the target over all ranks, in rank order
/// 0..n (so every rank and every algorithm gets identical bits), into `out`. Two staging tiles
/// follow `out` in scratch for peers reached through the transport.
fn reduce_tile(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let (reduce, reduce2) = (reduce_helper_name(op, dtype), reduce2_helper_name(op, dtype));
    format!(
        r#"static inline int32_t pld_reduce_all_{op}_{dtype}(pld_ctx *c, uint64_t off, uint64_t m, {ty} *out,
                                               uint8_t *staging) {{
    const uint64_t bytes = m * sizeof({ty});
    const void *x, *y;
    PLD_TRY(pld_remote_load(c, 0, off, bytes, staging, &x));
    PLD_TRY(pld_remote_load(c, 1, off, bytes, staging + PLD_TILE_BYTES, &y));
    {reduce2}(out, (const {ty} *)x, (const {ty} *)y, m);
    for (int32_t p = 2; p < c->nranks; ++p) {{
        PLD_TRY(pld_remote_load(c, p, off, bytes, staging, &x));
        {reduce}(out, (const {ty} *)x, m);
    }}
    return PLD_OK;
}}

"#
    )
}

/// The reduction of elements `[first, first + m)` over all ranks, in rank order, into this rank's
/// own tile `mine` (which holds its input): the ranks before it are reduced first (into `acc`,
/// a scratch tile, when there are two or more), then `mine` joins, then the ranks after it. Same
/// bits as [`reduce_tile`], without a scratch tile to copy back.
fn reduce_tile_in_place(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let (reduce, reduce2) = (reduce_helper_name(op, dtype), reduce2_helper_name(op, dtype));
    let reduce_rev = reduce_rev_helper_name(op, dtype);
    format!(
        r#"static inline int32_t pld_reduce_into_{op}_{dtype}(pld_ctx *c, uint64_t off, uint64_t m, {ty} *mine,
                                                {ty} *acc, uint8_t *staging) {{
    const uint64_t bytes = m * sizeof({ty});
    const int32_t r = c->rank;
    const void *x, *y;
    if (r > 0) {{
        const {ty} *before = acc;
        PLD_TRY(pld_remote_load(c, 0, off, bytes, staging, &x));
        if (r == 1) {{
            before = (const {ty} *)x;
        }} else {{
            PLD_TRY(pld_remote_load(c, 1, off, bytes, staging + PLD_TILE_BYTES, &y));
            {reduce2}(acc, (const {ty} *)x, (const {ty} *)y, m);
            for (int32_t p = 2; p < r; ++p) {{
                PLD_TRY(pld_remote_load(c, p, off, bytes, staging, &x));
                {reduce}(acc, (const {ty} *)x, m);
            }}
        }}
        {reduce_rev}(mine, before, m);
    }}
    for (int32_t p = r + 1; p < c->nranks; ++p) {{
        PLD_TRY(pld_remote_load(c, p, off, bytes, staging, &x));
        {reduce}(mine, (const {ty} *)x, m);
    }}
    return PLD_OK;
}}

"#
    )
}

/// One-shot. A payload that fits an LL slot travels as messages: every rank sends its buffer to
/// every peer's inbox and reduces what arrives, in rank order, then writes the result in place
/// (no round trips, and the inbox slots need no acknowledgement). A larger one: ready round;
/// every rank reduces all ranks' buffers into scratch, tile by tile; a round so no peer still
/// reads the target; then the result is copied in place.
fn all_reduce_mesh(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let (reduce, reduce2) = (reduce_helper_name(op, dtype), reduce2_helper_name(op, dtype));
    format!(
        r#"    const uint64_t n = a->count, bytes = n * sizeof({ty});
    if (c->nranks == 1) return PLD_OK;
    if (!pld_in_window(c, a->target_off, bytes)) return PLD_OUT_OF_BOUNDS;
    if (c->scratch_bytes < bytes + 2 * PLD_TILE_BYTES) return PLD_OUT_OF_BOUNDS;
    {ty} *acc = ({ty} *)c->scratch;
    {ty} *target = ({ty} *)(c->local_base + a->target_off);
    if (pld_ll_fits(c, a, bytes)) {{
        PLD_TRY(pld_ll_send(c, a, target, bytes));
        const void *x, *y;
        const int32_t w = c->nranks, r = c->rank;
#define PLD_LL_OPERAND(p, out) \
    do {{ if ((p) == r) *(out) = target; else PLD_TRY(pld_ll_receive(c, a, (p), (out))); }} while (0)
        PLD_LL_OPERAND(0, &x);
        PLD_LL_OPERAND(1, &y);
        {reduce2}(acc, (const {ty} *)x, (const {ty} *)y, n);
        for (int32_t p = 2; p < w; ++p) {{
            PLD_LL_OPERAND(p, &x);
            {reduce}(acc, (const {ty} *)x, n);
        }}
#undef PLD_LL_OPERAND
        memcpy(target, acc, bytes);
        return PLD_OK;
    }}
    uint8_t *staging = c->scratch + bytes;
    const uint64_t tile = PLD_TILE_BYTES / sizeof({ty});
    PLD_TRY(pld_ready_round(c, a));
    for (uint64_t i = 0; i < n; i += tile) {{
        const uint64_t m = n - i < tile ? n - i : tile;
        PLD_TRY(pld_reduce_all_{op}_{dtype}(c, a->target_off + i * sizeof({ty}), m, acc + i, staging));
    }}
    PLD_TRY(pld_round_all(c, a, 2));
    memcpy(c->local_base + a->target_off, acc, bytes);
    return pld_settle_all(c, a, 2);
"#
    )
}

/// Two-shot: ready round; rank r reduces chunk r from every rank (in rank order) a tile at a
/// time, in place in its own chunk, and writes each reduced tile into chunk r of every peer; a
/// closing round so every chunk has arrived everywhere. Chunk r of every rank is touched by rank
/// r alone during the call (read as input, then overwritten with the result), so the push needs
/// no round between the reduction and the gather, and nothing is copied twice: at 2 ranks each
/// rank reads 1 byte of its peer's and 1 of its own per byte of result and writes 1 locally and 1
/// remotely (a pull-based gather reads and writes once more). Scratch is three tiles.
///
/// Where a peer is reached only through the transport (MPI one-sided), the reduced chunks are
/// pulled instead, between a middle round and the closing one: a rank then reads only what it
/// fetched itself (Get, flushed) or wrote itself, never what a peer's Put left in its window,
/// which MPI's memory model makes visible to the owner only after a window synchronisation.
fn all_reduce_two_shot(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    // fp8 reduces a tile at a time in f32 (`crate::wide`): tiles of as many elements as an f32 tile holds.
    let acc_ty = if dtype.is_fp8() { "float" } else { ty };
    let divisor = if dtype.is_fp8() { ", a->divisor" } else { "" };
    format!(
        r#"    const int32_t w = c->nranks, r = c->rank;
    const uint64_t n = a->count;
    if (w == 1) return PLD_OK;
    if (!pld_in_window(c, a->target_off, n * sizeof({ty}))) return PLD_OUT_OF_BOUNDS;
    if (c->scratch_bytes < 3 * PLD_TILE_BYTES) return PLD_OUT_OF_BOUNDS;
    const uint64_t base = n / (uint64_t)w, extra = n % (uint64_t)w;
    const uint64_t lo = base * (uint64_t)r + ((uint64_t)r < extra ? (uint64_t)r : extra);
    const uint64_t len = base + ((uint64_t)r < extra ? 1 : 0);
    {acc_ty} *acc = ({acc_ty} *)c->scratch;
    uint8_t *staging = c->scratch + PLD_TILE_BYTES;
    const uint64_t tile = PLD_TILE_BYTES / sizeof({acc_ty});
    {ty} *mine = ({ty} *)(c->local_base + a->target_off);
    int push = 1;
    for (int32_t p = 0; p < w; ++p)
        if (!c->peer_bases[p]) push = 0;
    PLD_TRY(pld_ready_round(c, a));
    for (uint64_t i = 0; i < len; i += tile) {{
        const uint64_t m = len - i < tile ? len - i : tile, off = a->target_off + (lo + i) * sizeof({ty});
        PLD_TRY(pld_reduce_into_{op}_{dtype}(c, off, m, mine + lo + i, acc, staging{divisor}));
        for (int32_t k = 1; k < w && push; ++k)
            PLD_TRY(pld_put(c, (r + k) % w, off, mine + lo + i, m * sizeof({ty})));
    }}
    PLD_TRY(pld_round_all(c, a, 2));
    if (push) return pld_settle_all(c, a, 2);
    for (int32_t i = 1; i < w; ++i) {{
        const int32_t q = (r + i) % w;
        const uint64_t qlo = base * (uint64_t)q + ((uint64_t)q < extra ? (uint64_t)q : extra);
        const uint64_t qlen = base + ((uint64_t)q < extra ? 1 : 0);
        PLD_TRY(pld_get(c, q, mine + qlo, a->target_off + qlo * sizeof({ty}), qlen * sizeof({ty})));
    }}
    PLD_TRY(pld_round_all(c, a, 3));
    return pld_settle_all(c, a, 3);
"#
    )
}

/// Ring: the buffer is cut into nranks balanced chunks (any count, chunks may be empty). Step s
/// of the reduce-scatter pulls chunk (rank-s-1) from the left neighbour and reduces it into the
/// own chunk; step s of the all-gather copies chunk (rank-s). A round with both neighbours
/// follows the ready point and every step, so neighbours are never more than one step apart:
/// a chunk is read only after its writer finished the step that wrote it, and overwritten only
/// after its reader finished the step that read it. The last round is the closing barrier.
///
/// A function of the target's offset, so fp8's ring runs f32's over an f32 shadow.
fn ring_fn(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let reduce = reduce_helper_name(op, dtype);
    let name = ring_fn_name(op, dtype);
    format!(
        r#"static int32_t {name}(pld_ctx *c, const pld_coll_args *a, uint64_t target_off) {{
    const int32_t w = c->nranks, r = c->rank;
    const uint64_t n = a->count;
    if (w == 1) return PLD_OK;
    if (!pld_in_window(c, target_off, n * sizeof({ty}))) return PLD_OUT_OF_BOUNDS;
    if (c->scratch_bytes < PLD_TILE_BYTES) return PLD_OUT_OF_BOUNDS;
    const int32_t left = (r + w - 1) % w, right = (r + 1) % w;
    const uint64_t base = n / (uint64_t)w, extra = n % (uint64_t)w;
    const uint64_t tile = PLD_TILE_BYTES / sizeof({ty});
    {ty} *mine = ({ty} *)(c->local_base + target_off);
    int32_t round = 0;
#define PLD_RING_ROUND()                                                     \
    do {{                                                                     \
        ++round;                                                             \
        PLD_TRY(pld_credit(c, a, left));                                     \
        if (right != left) PLD_TRY(pld_credit(c, a, right));                 \
        PLD_TRY(pld_await(c, a, left, round));                               \
        if (right != left) PLD_TRY(pld_await(c, a, right, round));           \
    }} while (0)
    PLD_TRY(pld_publish(c, a));
    ++round;
    PLD_TRY(pld_credit(c, a, left));
    if (right != left) PLD_TRY(pld_credit(c, a, right));
    PLD_TRY(pld_await_first(c, a, left, pld_cell(a, left), 1));
    if (right != left) PLD_TRY(pld_await_first(c, a, right, pld_cell(a, right), 1));
    PLD_TRY(pld_check_peer(c, a, left));
    if (right != left) PLD_TRY(pld_check_peer(c, a, right));
    for (int32_t s = 0; s < 2 * (w - 1); ++s) {{
        const int gather = s >= w - 1;
        const int32_t k = gather ? (r - (s - (w - 1)) + w) % w : (r - s - 1 + 2 * w) % w;
        const uint64_t lo = base * (uint64_t)k + ((uint64_t)k < extra ? (uint64_t)k : extra);
        const uint64_t len = base + ((uint64_t)k < extra ? 1 : 0);
        for (uint64_t i = 0; i < len; i += tile) {{
            const uint64_t m = len - i < tile ? len - i : tile;
            const uint64_t off = target_off + (lo + i) * sizeof({ty});
            if (gather) {{
                PLD_TRY(pld_get(c, left, mine + lo + i, off, m * sizeof({ty})));
            }} else {{
                const void *src;
                PLD_TRY(pld_remote_load(c, left, off, m * sizeof({ty}), c->scratch, &src));
                {reduce}(mine + lo + i, (const {ty} *)src, m);
            }}
        }}
        PLD_RING_ROUND();
    }}
#undef PLD_RING_ROUND
    PLD_TRY(pld_settle(c, a, left, round));
    if (right != left) PLD_TRY(pld_settle(c, a, right, round));
    return PLD_OK;
}}

"#
    )
}

pub(crate) fn ring_fn_name(op: ReduceOp, dtype: DType) -> String {
    format!("pld_ring_{op}_{dtype}")
}

/// Row `rank` of the [nranks, count] target becomes the reduction of that row over all ranks.
/// Rows that `pld_ll_rows` admits travel as messages, row p to peer p (no rounds); larger ones
/// are read from the peers between two rounds. Either way peers need only their own row index
/// from this rank, so the reduction runs in place, in the same order (this rank, then the next
/// ones around the ring).
fn reduce_scatter(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let reduce = reduce_helper_name(op, dtype);
    format!(
        r#"    const uint64_t n = a->count, row = n * sizeof({ty});
    if (c->nranks == 1) return PLD_OK;
    if (!pld_in_window(c, a->target_off, row * (uint64_t)c->nranks)) return PLD_OUT_OF_BOUNDS;
    if (c->scratch_bytes < PLD_TILE_BYTES) return PLD_OUT_OF_BOUNDS;
    const uint64_t tile = PLD_TILE_BYTES / sizeof({ty});
    const uint64_t mine_off = a->target_off + row * (uint64_t)c->rank;
    {ty} *mine = ({ty} *)(c->local_base + mine_off);
    if (pld_ll_rows(c, a, row)) {{
        PLD_TRY(pld_ll_send_rows(c, a, c->local_base + a->target_off, row));
        for (int32_t i = 1; i < c->nranks; ++i) {{
            const void *src;
            PLD_TRY(pld_ll_receive(c, a, (c->rank + i) % c->nranks, &src));
            {reduce}(mine, (const {ty} *)src, n);
        }}
        return PLD_OK;
    }}
    PLD_TRY(pld_ready_round(c, a));
    for (int32_t i = 1; i < c->nranks; ++i) {{
        const int32_t p = (c->rank + i) % c->nranks;
        for (uint64_t j = 0; j < n; j += tile) {{
            const uint64_t m = n - j < tile ? n - j : tile;
            const void *src;
            PLD_TRY(pld_remote_load(c, p, mine_off + j * sizeof({ty}), m * sizeof({ty}), c->scratch, &src));
            {reduce}(mine + j, (const {ty} *)src, m);
        }}
    }}
    PLD_TRY(pld_round_all(c, a, 2));
    return pld_settle_all(c, a, 2);
"#
    )
}

/// The closing handshake of the rooted collectives that collect at the root (reduce, gather)
/// when the payload is too large for messages: each peer credits the root once its buffer is
/// ready and leaves when the root credits back (done reading it); the root waits for every
/// peer's credit, checking each peer's call, before `work` reads them. Every rank checks exactly
/// the peers that check it: the root every peer, a peer the root.
const ROOT_COLLECT: &str = r#"/* The root's side of a collect: every peer ready (and checked). */
static inline int32_t pld_collect_ready(pld_ctx *c, const pld_coll_args *a) {
    const int32_t w = c->nranks, root = a->root;
    PLD_TRY(pld_publish(c, a));
    for (int32_t i = 1; i < w; ++i) {
        const int32_t p = (root + i) % w;
        PLD_TRY(pld_await_first(c, a, p, a->signal_off, w));
        PLD_TRY(pld_check_peer(c, a, p));
    }
    return PLD_OK;
}

/* The root's side after reading: every peer may leave. */
static inline int32_t pld_collect_done(pld_ctx *c, const pld_coll_args *a) {
    const int32_t w = c->nranks, root = a->root;
    for (int32_t i = 1; i < w; ++i) PLD_TRY(pld_credit(c, a, (root + i) % w));
    return pld_settle_all(c, a, 1);
}

/* A peer's side of a collect: ready, then wait until the root read this rank's buffer. */
static inline int32_t pld_collect_peer(pld_ctx *c, const pld_coll_args *a) {
    const int32_t root = a->root;
    PLD_TRY(pld_publish(c, a));
    PLD_TRY(pld_credit(c, a, root));
    PLD_TRY(pld_await_first(c, a, root, pld_cell(a, root), 1));
    PLD_TRY(pld_check_peer(c, a, root));
    return pld_settle(c, a, root, 1);
}

/* The root's side when it opens the call to its peers (scatter's input may be read, gather's
 * target written): credit every peer, then wait for each one's credit back, checking its call. */
static inline int32_t pld_root_open(pld_ctx *c, const pld_coll_args *a) {
    const int32_t w = c->nranks, root = a->root;
    for (int32_t i = 1; i < w; ++i) PLD_TRY(pld_credit(c, a, (root + i) % w));
    for (int32_t i = 1; i < w; ++i) {
        const int32_t p = (root + i) % w;
        PLD_TRY(pld_await_first(c, a, p, a->signal_off, w));
        PLD_TRY(pld_check_peer(c, a, p));
    }
    return pld_settle_all(c, a, 1);
}

/* A peer's side of an opened call: wait for the root's credit, checking its call. */
static inline int32_t pld_await_root(pld_ctx *c, const pld_coll_args *a) {
    PLD_TRY(pld_await_first(c, a, a->root, pld_cell(a, a->root), 1));
    return pld_check_peer(c, a, a->root);
}

/* A peer's side after its transfer: credit the root back and leave. */
static inline int32_t pld_release_root(pld_ctx *c, const pld_coll_args *a) {
    PLD_TRY(pld_credit(c, a, a->root));
    return pld_settle(c, a, a->root, 1);
}

"#;

/// Reduce to the root: the root's target becomes the reduction of every rank's, in rank order
/// (the bits of all_reduce); the other ranks' targets are only read. A payload that fits an LL
/// slot travels as a message from every peer to the root, which checks and reduces what arrives
/// (each peer leaves once its message is out, as gather's do); a larger one is read by the root
/// tile by tile between the collect handshake's credits (the reduced tile replaces the root's
/// own in place: tiles are disjoint, so a later tile still reads the root's input).
fn reduce(op: ReduceOp, dtype: DType) -> String {
    let ty = storage_type(dtype);
    let (reduce, reduce2) = (reduce_helper_name(op, dtype), reduce2_helper_name(op, dtype));
    format!(
        r#"    const int32_t w = c->nranks, r = c->rank, root = a->root;
    const uint64_t n = a->count, bytes = n * sizeof({ty});
    if (w == 1) return PLD_OK;
    if (root < 0 || root >= w) return PLD_OUT_OF_BOUNDS;
    if (!pld_in_window(c, a->target_off, bytes)) return PLD_OUT_OF_BOUNDS;
    {ty} *target = ({ty} *)(c->local_base + a->target_off);
    if (pld_ll_fits(c, a, bytes)) {{
        const void *x, *y;
        PLD_TRY(pld_publish(c, a));
        if (r != root) return pld_ll_send_to(c, a, root, target, bytes);
        if (c->scratch_bytes < bytes) return PLD_OUT_OF_BOUNDS;
        {ty} *acc = ({ty} *)c->scratch;
#define PLD_LL_OPERAND(p, out) \
    do {{ if ((p) == r) *(out) = target; else PLD_TRY(pld_ll_receive(c, a, (p), (out))); }} while (0)
        PLD_LL_OPERAND(0, &x);
        PLD_LL_OPERAND(1, &y);
        {reduce2}(acc, (const {ty} *)x, (const {ty} *)y, n);
        for (int32_t p = 2; p < w; ++p) {{
            PLD_LL_OPERAND(p, &x);
            {reduce}(acc, (const {ty} *)x, n);
        }}
#undef PLD_LL_OPERAND
        memcpy(target, acc, bytes);
        pld_ll_look_ahead_all(c, a, root, bytes);
        return PLD_OK;
    }}
    if (r != root) return pld_collect_peer(c, a);
    if (c->scratch_bytes < 3 * PLD_TILE_BYTES) return PLD_OUT_OF_BOUNDS;
    {ty} *acc = ({ty} *)c->scratch;
    uint8_t *staging = c->scratch + PLD_TILE_BYTES;
    const uint64_t tile = PLD_TILE_BYTES / sizeof({ty});
    PLD_TRY(pld_collect_ready(c, a));
    for (uint64_t i = 0; i < n; i += tile) {{
        const uint64_t m = n - i < tile ? n - i : tile;
        PLD_TRY(pld_reduce_all_{op}_{dtype}(c, a->target_off + i * sizeof({ty}), m, acc, staging));
        memcpy(target + i, acc, m * sizeof({ty}));
    }}
    return pld_collect_done(c, a);
"#
    )
}

/// Gather to the root: row p of the root's [nranks, row] target receives rank p's local row
/// (the root's own copied locally); the other ranks' targets are untouched. Rows that
/// `pld_ll_rows` admits travel as messages to the root, and each peer leaves once its row is out
/// (the root checks every peer's fingerprint on arrival, and waits for each, so a peer that
/// disagrees is caught there, or by a probe of its board while the root waits for it); larger
/// ones are written by every peer into the root's target at once, between the root's credit
/// (its target may be written) and the peer's (done), or, where a peer is reached through the
/// transport only, pulled by the root between the collect handshake's credits. (The root pulling
/// every row in turn was 0.72x of Open MPI at 4 ranks, 8 MiB: one core copied them all.)
const GATHER: &str = r#"    const int32_t w = c->nranks, r = c->rank, root = a->root;
    const uint64_t row = a->row_bytes;
    if (root < 0 || root >= w) return PLD_OUT_OF_BOUNDS;
    if (!pld_in_window(c, a->input_off, row) ||
        !pld_in_window(c, a->target_off, row * (uint64_t)w)) return PLD_OUT_OF_BOUNDS;
    uint8_t *target = c->local_base + a->target_off;
    const uint8_t *local = c->local_base + a->input_off;
    if (r == root) pld_copy(target + row * (uint64_t)r, local, row);
    if (w == 1) return PLD_OK;
    if (pld_ll_rows(c, a, row)) {
        const void *data;
        PLD_TRY(pld_publish(c, a));
        if (r != root) return pld_ll_send_to(c, a, root, local, row);
        for (int32_t i = 1; i < w; ++i) {
            const int32_t p = (root + i) % w;
            PLD_TRY(pld_ll_receive(c, a, p, &data));
            memcpy(target + row * (uint64_t)p, data, row);
        }
        pld_ll_look_ahead_all(c, a, root, row);
        return PLD_OK;
    }
    int push = 1;
    for (int32_t p = 0; p < w; ++p)
        if (!c->peer_bases[p]) push = 0;
    if (push) {
        /* Every peer writes its own row into the root's target at once (the root alone would
         * copy every row in turn): the root credits each peer once its target may be written,
         * each peer puts its row and credits back. */
        PLD_TRY(pld_publish(c, a));
        if (r == root) return pld_root_open(c, a);
        PLD_TRY(pld_await_root(c, a));
        PLD_TRY(pld_put(c, root, a->target_off + row * (uint64_t)r, local, row));
        return pld_release_root(c, a);
    }
    /* A peer reached through the transport only: the root pulls (it reads only what it fetched
     * itself, never what a peer's Put left in its window, which MPI makes visible to the owner
     * only after a window synchronisation). */
    if (r != root) return pld_collect_peer(c, a);
    PLD_TRY(pld_collect_ready(c, a));
    for (int32_t i = 1; i < w; ++i) {
        const int32_t p = (root + i) % w;
        PLD_TRY(pld_get(c, p, target + row * (uint64_t)p, a->input_off, row));
    }
    return pld_collect_done(c, a);
"#;

/// Scatter from the root: every rank's target receives row `rank` of the root's [nranks, row]
/// input (the root's own copied locally); only the root's input is read. Rows that
/// `pld_ll_rows` admits travel as unanswered messages from the root, which leaves once they are
/// out (checked as broadcast's are: by each peer on arrival, and taken); larger ones are pulled
/// by each peer once the root credits it, and the root leaves when every peer has credited back.
const SCATTER: &str = r#"    const int32_t w = c->nranks, r = c->rank, root = a->root;
    const uint64_t row = a->row_bytes;
    if (root < 0 || root >= w) return PLD_OUT_OF_BOUNDS;
    if (!pld_in_window(c, a->input_off, row * (uint64_t)w) ||
        !pld_in_window(c, a->target_off, row)) return PLD_OUT_OF_BOUNDS;
    uint8_t *target = c->local_base + a->target_off;
    if (r == root) pld_copy(target, c->local_base + a->input_off + row * (uint64_t)r, row);
    if (w == 1) return PLD_OK;
    if (pld_ll_rows(c, a, row)) {
        const void *data;
        PLD_TRY(pld_publish(c, a));
        if (r == root) return pld_ll_post_all(c, a, root, c->local_base + a->input_off, row, row, pld_ll_unanswered(a));
        int waited;
        PLD_TRY(pld_ll_await(c, a, root, &data, &waited));
        memcpy(target, data, row);
        pld_ll_take(c, a, root, row, waited);
        return PLD_OK;
    }
    PLD_TRY(pld_publish(c, a));
    if (r == root) return pld_root_open(c, a);
    PLD_TRY(pld_await_root(c, a));
    PLD_TRY(pld_get(c, root, target, a->input_off + row * (uint64_t)r, row));
    return pld_release_root(c, a);
"#;

/// A batch of sends and receives (the point-to-point protocol of the ABI header): every send
/// whose slot is free is posted at once, then each direction advances as its peer's words
/// arrive, whatever the order of the directions; the batch sleeps on its doorbell between rounds
/// that moved nothing. A round costs one look per direction, not per message, so a batch of
/// thousands of messages (a loop of sends and receives with nothing between) stays linear.
const SEND_RECV: &str = r#"    const pld_p2p_args *a = (const pld_p2p_args *)args;
    const uint64_t area = a->area_off;
    const uint64_t depth = a->depth;
    if (depth == 0 || depth > PLD_P2P_DEPTH_MAX || (depth & (depth - 1)) != 0 || area % 64 != 0 ||
        !pld_in_window(c, area, pld_p2p_area_bytes(c->nranks, depth)))
        return PLD_OUT_OF_BOUNDS;
    /* The ops come grouped by direction (peer, send or receive), each direction in message
     * order (the host sorts them so). A direction progresses in order, so a round looks at each
     * direction's head only: [first, end, next to post, next to finish] per direction, in scratch. */
    uint64_t *dirs = (uint64_t *)c->scratch, ndirs = 0;
    for (uint64_t i = 0; i < a->nops;) {
        const pld_p2p_op *first = &a->ops[i];
        uint64_t j = i;
        for (; j < a->nops && a->ops[j].peer == first->peer && a->ops[j].is_send == first->is_send; ++j) {
            const pld_p2p_op *op = &a->ops[j];
            if (op->peer < 0 || op->peer >= c->nranks || op->seq == 0 || !pld_in_window(c, op->off, op->bytes) ||
                (j > i && op->seq <= a->ops[j - 1].seq)) {
                a->ops[j].state = 3;
                c->diag->index = op->peer;
                return PLD_OUT_OF_BOUNDS;
            }
        }
        if (32 * (ndirs + 1) > c->scratch_bytes) return PLD_OUT_OF_BOUNDS;
        uint64_t *d = dirs + 4 * ndirs++;
        d[0] = i, d[1] = j, d[2] = i, d[3] = i;
        i = j;
    }
    const int32_t *bell = (const int32_t *)(c->local_base + area);
    uint64_t left = a->nops;
    pld_backoff b = PLD_BACKOFF_INIT;
    while (left) {
        const int32_t rung = __atomic_load_n(bell, __ATOMIC_ACQUIRE);
        int moved = 0;
        for (uint64_t k = 0; k < ndirs; ++k) {
            uint64_t *d = dirs + 4 * k;
            if (a->ops[d[0]].is_send) {
                /* Post while the slot is free: the message `depth` before is acknowledged. */
                for (; d[2] < d[1]; ++d[2]) {
                    pld_p2p_op *op = &a->ops[d[2]];
                    const uint64_t ack = pld_p2p_ack_off(c, a, op->peer, op->seq);
                    if (op->seq > depth && pld_p2p_seen(c, ack) < op->seq - depth) break;
                    const uint64_t desc[6] = {op->seq, op->what[0], op->what[1], op->what[2], op->off, op->bytes};
                    PLD_TRY(pld_p2p_write(c, area, op->peer, pld_p2p_desc_off(a, c->rank, op->seq), desc, 6));
                    op->state = 1;
                    moved = 1;
                }
                /* Done once acknowledged; a later message of the slot acknowledged (posted after
                 * this one's acknowledgement, which it overwrote) means done too. */
                for (; d[3] < d[2]; ++d[3]) {
                    pld_p2p_op *op = &a->ops[d[3]];
                    const uint64_t ack = pld_p2p_ack_off(c, a, op->peer, op->seq);
                    const uint64_t seen = pld_p2p_seen(c, ack);
                    if (seen < op->seq) break;
                    const uint64_t *words = (const uint64_t *)(c->local_base + ack);
                    const uint64_t status = seen == op->seq ? __atomic_load_n(&words[4], __ATOMIC_ACQUIRE) : PLD_OK;
                    if (status != PLD_OK && pld_p2p_seen(c, ack) == op->seq) { /* not since overwritten */
                        memcpy(op->peer_what, words + 1, sizeof op->peer_what);
                        op->state = 3;
                        c->diag->index = op->peer;
                        return (int32_t)status;
                    }
                    op->state = 2;
                    --left;
                    moved = 1;
                }
            } else {
                for (; d[3] < d[1]; ++d[3]) {
                    pld_p2p_op *op = &a->ops[d[3]];
                    const uint64_t off = pld_p2p_desc_off(a, op->peer, op->seq);
                    if (pld_p2p_seen(c, off) != op->seq) break;
                    const uint64_t *desc = (const uint64_t *)(c->local_base + off);
                    const int same = memcmp(desc + 1, op->what, sizeof op->what) == 0;
                    uint64_t ack[5] = {op->seq, op->what[0], op->what[1], op->what[2], same ? PLD_OK : PLD_MISMATCH};
                    if (same) PLD_TRY(pld_get(c, op->peer, c->local_base + op->off, desc[4], op->bytes));
                    PLD_TRY(pld_p2p_write(c, area, op->peer, pld_p2p_ack_off(c, a, c->rank, op->seq), ack, 5));
                    if (!same) {
                        memcpy(op->peer_what, desc + 1, sizeof op->peer_what);
                        op->state = 3;
                        c->diag->index = op->peer;
                        return PLD_MISMATCH;
                    }
                    op->state = 2;
                    --left;
                    moved = 1;
                }
            }
        }
        if (!left) {
            pld_backoff_done(c, &b);
            break;
        }
        if (moved) {
            pld_backoff_done(c, &b);
            b = (pld_backoff)PLD_BACKOFF_INIT;
            continue;
        }
        pld_backoff_watch(c, &b, area, area, 0, rung + 1, PLD_WAIT_GE, -1);
        const int32_t status = pld_backoff_step(c, &b, bell, rung);
        if (status == PLD_TIMEOUT) {
            for (uint64_t i = 0; i < a->nops; ++i)
                if (a->ops[i].state < 2) {
                    c->diag->index = a->ops[i].peer;
                    break;
                }
            return pld_timed_out(c, area, rung, __atomic_load_n(bell, __ATOMIC_ACQUIRE), PLD_WAIT_EQ, area, 0);
        }
        if (status != PLD_OK) return status;
    }
    return PLD_OK;
"#;

/// A buffer that fits an LL slot travels as messages: the root posts it to every peer, unanswered,
/// and leaves, as MPI's root leaves once its data is out; each peer checks the root's
/// fingerprint on arrival, copies the data and marks the message taken. A peer that disagrees
/// on the call is caught by that peer, or (when it did not wait for this root at all) by the root
/// when it next uses the slot or by the runtime at the next world-wide sync. A larger one: the
/// root credits every peer once its buffer is ready; each peer copies it, then credits the root,
/// which leaves only when no peer still reads its buffer.
const BROADCAST: &str = r#"    const int32_t root = a->root;
    if (c->nranks == 1) return PLD_OK;
    if (root < 0 || root >= c->nranks) return PLD_OUT_OF_BOUNDS;
    if (!pld_in_window(c, a->target_off, a->count)) return PLD_OUT_OF_BOUNDS;
    if (pld_ll_fits(c, a, a->count)) {
        const void *data;
        PLD_TRY(pld_publish(c, a));
        if (c->rank == root)
            return pld_ll_post_all(c, a, root, c->local_base + a->target_off, 0, a->count, pld_ll_unanswered(a));
        int waited;
        PLD_TRY(pld_ll_await(c, a, root, &data, &waited));
        memcpy(c->local_base + a->target_off, data, a->count);
        pld_ll_take(c, a, root, a->count, waited);
        return PLD_OK;
    }
    PLD_TRY(pld_publish(c, a));
    if (c->rank == root) {
        for (int32_t i = 1; i < c->nranks; ++i) PLD_TRY(pld_credit(c, a, (root + i) % c->nranks));
        for (int32_t i = 1; i < c->nranks; ++i) {
            const int32_t p = (root + i) % c->nranks;
            PLD_TRY(pld_await_first(c, a, p, a->signal_off, c->nranks));
            PLD_TRY(pld_check_peer(c, a, p));
        }
        return pld_settle_all(c, a, 1);
    }
    PLD_TRY(pld_await_first(c, a, root, pld_cell(a, root), 1));
    PLD_TRY(pld_check_peer(c, a, root));
    PLD_TRY(pld_get(c, root, c->local_base + a->target_off, a->target_off, a->count));
    PLD_TRY(pld_credit(c, a, root));
    return pld_settle(c, a, root, 1);
"#;

/// Whether all_gather, all_to_all and reduce_scatter send their rows as LL messages rather than pull them
/// between two rounds. With more ranks than cores every round costs thread switches, and LL
/// wins up to the slot size (4 ranks on 2 cores, 4 KiB rows: all_to_all 6.8-7.0 us against
/// 10.9-14.5 us). At 2 ranks a round is one cache-line round trip and LL copies the bytes twice
/// (into the inbox, out of it), so pulling catches up at 2 KiB rows (0.37 us against 0.35) and
/// wins at 4 KiB (0.38 against 0.58).
const LL_ROWS: &str = r#"static inline int pld_ll_rows(const pld_ctx *c, const pld_coll_args *a, uint64_t row) {
    return pld_ll_fits(c, a, row) && (c->nranks > 2 || row < 2048);
}

/* Row p of `target` receives peer p's message of this call, for every peer. */
static inline int32_t pld_ll_receive_rows(pld_ctx *c, const pld_coll_args *a, uint8_t *target, uint64_t row) {
    for (int32_t i = 1; i < c->nranks; ++i) {
        const int32_t p = (c->rank + i) % c->nranks;
        const void *data;
        PLD_TRY(pld_ll_receive(c, a, p, &data));
        memcpy(target + row * (uint64_t)p, data, row);
    }
    return PLD_OK;
}

"#;

/// all_to_all_v's check of one count against the block capacity: outside [0, cap], the
/// diagnosis names the count's cell (`cell_off`, in the sender's window), the peer and the value.
const COUNT_CHECK: &str = r#"static inline int32_t pld_check_count(pld_ctx *c, int32_t count, int64_t cap, uint64_t cell_off, int32_t peer) {
    if (count >= 0 && count <= cap) return PLD_OK;
    c->diag->cell_off = cell_off;
    c->diag->index = peer;
    c->diag->value = count;
    c->diag->limit = cap;
    return PLD_BAD_COUNT;
}

"#;

/// Row p of the target receives peer p's local row: rows that `pld_ll_rows` admits travel as a
/// message to every peer (no rounds); larger ones are pulled between a ready round and a closing
/// round.
const ALL_GATHER: &str = r#"    const uint64_t row = a->row_bytes;
    if (!pld_in_window(c, a->input_off, row) ||
        !pld_in_window(c, a->target_off, row * (uint64_t)c->nranks)) return PLD_OUT_OF_BOUNDS;
    uint8_t *target = c->local_base + a->target_off;
    pld_copy(target + row * (uint64_t)c->rank, c->local_base + a->input_off, row);
    if (c->nranks == 1) return PLD_OK;
    if (pld_ll_rows(c, a, row)) {
        PLD_TRY(pld_ll_send(c, a, c->local_base + a->input_off, row));
        return pld_ll_receive_rows(c, a, target, row);
    }
    PLD_TRY(pld_ready_round(c, a));
    for (int32_t i = 1; i < c->nranks; ++i) {
        const int32_t p = (c->rank + i) % c->nranks;
        PLD_TRY(pld_get(c, p, target + row * (uint64_t)p, a->input_off, row));
    }
    PLD_TRY(pld_round_all(c, a, 2));
    return pld_settle_all(c, a, 2);
"#;

/// Row p of the target receives row `rank` of peer p's input: rows that `pld_ll_rows` admits
/// travel as messages, row p of the input to peer p (no rounds); larger ones are pulled between
/// a ready round and a closing round.
const ALL_TO_ALL: &str = r#"    const uint64_t row = a->row_bytes, w = (uint64_t)c->nranks, r = (uint64_t)c->rank;
    if (!pld_in_window(c, a->input_off, row * w) ||
        !pld_in_window(c, a->target_off, row * w)) return PLD_OUT_OF_BOUNDS;
    uint8_t *target = c->local_base + a->target_off;
    pld_copy(target + row * r, c->local_base + a->input_off + row * r, row);
    if (w == 1) return PLD_OK;
    if (pld_ll_rows(c, a, row)) {
        PLD_TRY(pld_ll_send_rows(c, a, c->local_base + a->input_off, row));
        return pld_ll_receive_rows(c, a, target, row);
    }
    PLD_TRY(pld_ready_round(c, a));
    for (int32_t i = 1; i < c->nranks; ++i) {
        const int32_t p = (c->rank + i) % c->nranks;
        PLD_TRY(pld_get(c, p, target + row * (uint64_t)p, a->input_off + row * r, row));
    }
    PLD_TRY(pld_round_all(c, a, 2));
    return pld_settle_all(c, a, 2);
"#;

/// Input and target are [nranks * max_rows] rows; block d of the input holds the rows for peer
/// d. Each rank first checks its own send counts (so a bad count is reported by its sender,
/// before anything moves), then pulls exactly the counted rows of its block from every peer and
/// records the counts in recv_counts. Where a whole block and its count fit an LL slot (as
/// `pld_ll_rows` admits), each block travels instead as a message to its peer: the count, then
/// the counted rows (no rounds).
const ALL_TO_ALL_V: &str = r#"    const uint64_t row = a->row_bytes, w = (uint64_t)c->nranks, r = (uint64_t)c->rank;
    const int64_t cap = a->max_rows;
    const uint64_t block = row * (uint64_t)cap;
    if (cap < 0 || !pld_in_window(c, a->input_off, block * w) ||
        !pld_in_window(c, a->target_off, block * w) ||
        !pld_in_window(c, a->send_counts_off, 4 * w) ||
        !pld_in_window(c, a->recv_counts_off, 4 * w)) return PLD_OUT_OF_BOUNDS;
    const int32_t *send = (const int32_t *)(c->local_base + a->send_counts_off);
    int32_t *recv = (int32_t *)(c->local_base + a->recv_counts_off);
    for (uint64_t d = 0; d < w; ++d) PLD_TRY(pld_check_count(c, send[d], cap, a->send_counts_off + 4 * d, (int32_t)d));
    uint8_t *target = c->local_base + a->target_off;
    if (w > 1 && 8 + block <= c->scratch_bytes && pld_ll_rows(c, a, 8 + block)) {
        PLD_TRY(pld_publish(c, a)); /* for peers in another collective, which probe the board */
        uint8_t *message = c->scratch;
        for (uint64_t i = 1; i < w; ++i) {
            const int32_t p = (int32_t)((r + i) % w);
            const uint64_t bytes = row * (uint64_t)send[p];
            memset(message, 0, 8);
            memcpy(message, &send[p], 4);
            memcpy(message + 8, c->local_base + a->input_off + block * (uint64_t)p, bytes);
            PLD_TRY(pld_ll_send_to(c, a, p, message, 8 + bytes));
        }
        recv[r] = send[r];
        pld_copy(target + block * r, c->local_base + a->input_off + block * r, row * (uint64_t)send[r]);
        for (uint64_t i = 1; i < w; ++i) {
            const int32_t p = (int32_t)((r + i) % w);
            const void *data;
            int32_t count;
            PLD_TRY(pld_ll_receive(c, a, p, &data));
            memcpy(&count, data, 4);
            PLD_TRY(pld_check_count(c, count, cap, a->send_counts_off + 4 * r, p));
            recv[p] = count;
            memcpy(target + block * (uint64_t)p, (const uint8_t *)data + 8, row * (uint64_t)count);
        }
        return PLD_OK;
    }
    if (w > 1) PLD_TRY(pld_ready_round(c, a));
    for (uint64_t i = 0; i < w; ++i) {
        const int32_t p = (int32_t)((r + i) % w);
        int32_t count;
        PLD_TRY(pld_get(c, p, &count, a->send_counts_off + 4 * r, 4));
        PLD_TRY(pld_check_count(c, count, cap, a->send_counts_off + 4 * r, p));
        recv[p] = count;
        PLD_TRY(pld_get(c, p, target + block * (uint64_t)p, a->input_off + block * r,
                        row * (uint64_t)count));
    }
    if (w == 1) return PLD_OK;
    PLD_TRY(pld_round_all(c, a, 2));
    return pld_settle_all(c, a, 2);
"#;

/// Local is [max_rows] rows; target is [nranks * max_rows] rows, block p for rank p; counts is
/// int32 [nranks]. Each rank checks its own count, counts[rank] (a bad one is reported by the
/// rank that set it, before anything moves), copies its counted rows into its own block, then
/// takes every peer's count and exactly that many rows, recording the count in counts[peer].
/// A rank writes only the entries of other ranks, and peers read only the entry of its rank, so
/// nobody reads an entry while it changes. Where a block and its count fit an LL slot (as
/// `pld_ll_rows` admits), each rank's count and rows travel instead as one message to every peer
/// (no rounds).
const ALL_GATHER_V: &str = r#"    const uint64_t row = a->row_bytes, w = (uint64_t)c->nranks, r = (uint64_t)c->rank;
    const int64_t cap = a->max_rows;
    const uint64_t block = row * (uint64_t)cap;
    if (cap < 0 || !pld_in_window(c, a->input_off, block) ||
        !pld_in_window(c, a->target_off, block * w) ||
        !pld_in_window(c, a->send_counts_off, 4 * w)) return PLD_OUT_OF_BOUNDS;
    int32_t *counts = (int32_t *)(c->local_base + a->send_counts_off);
    const int32_t mine = counts[r];
    PLD_TRY(pld_check_count(c, mine, cap, a->send_counts_off + 4 * r, (int32_t)r));
    uint8_t *target = c->local_base + a->target_off;
    const uint8_t *local = c->local_base + a->input_off;
    pld_copy(target + block * r, local, row * (uint64_t)mine);
    if (w == 1) return PLD_OK;
    if (8 + block <= c->scratch_bytes && pld_ll_rows(c, a, 8 + block)) {
        uint8_t *message = c->scratch;
        memset(message, 0, 8);
        memcpy(message, &mine, 4);
        memcpy(message + 8, local, row * (uint64_t)mine);
        PLD_TRY(pld_ll_send(c, a, message, 8 + row * (uint64_t)mine));
        for (uint64_t i = 1; i < w; ++i) {
            const int32_t p = (int32_t)((r + i) % w);
            const void *data;
            int32_t count;
            PLD_TRY(pld_ll_receive(c, a, p, &data));
            memcpy(&count, data, 4);
            PLD_TRY(pld_check_count(c, count, cap, a->send_counts_off + 4 * (uint64_t)p, p));
            counts[p] = count;
            memcpy(target + block * (uint64_t)p, (const uint8_t *)data + 8, row * (uint64_t)count);
        }
        return PLD_OK;
    }
    PLD_TRY(pld_ready_round(c, a));
    for (uint64_t i = 1; i < w; ++i) {
        const int32_t p = (int32_t)((r + i) % w);
        int32_t count;
        PLD_TRY(pld_get(c, p, &count, a->send_counts_off + 4 * (uint64_t)p, 4));
        PLD_TRY(pld_check_count(c, count, cap, a->send_counts_off + 4 * (uint64_t)p, p));
        counts[p] = count;
        PLD_TRY(pld_get(c, p, target + block * (uint64_t)p, a->input_off, row * (uint64_t)count));
    }
    PLD_TRY(pld_round_all(c, a, 2));
    return pld_settle_all(c, a, 2);
"#;

/// Where peers are addressable, an empty LL message to every peer, then one from every peer (a
/// rank leaves only once every rank has arrived; no round trip); otherwise one credit round.
const BARRIER: &str = r#"    if (c->nranks == 1) return PLD_OK;
    if (pld_ll_fits(c, a, 0)) {
        PLD_TRY(pld_ll_send(c, a, NULL, 0));
        const void *none;
        for (int32_t i = 1; i < c->nranks; ++i) PLD_TRY(pld_ll_receive(c, a, (c->rank + i) % c->nranks, &none));
        return PLD_OK;
    }
    PLD_TRY(pld_ready_round(c, a));
    return pld_settle_all(c, a, 1);
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_is_defined_once() {
        let c = builtin_source().to_c();
        for v in KernelVariant::all() {
            let def = format!("int32_t {}(pld_ctx *c, const void *args)", v.symbol());
            assert_eq!(c.matches(&def).count(), 1, "{}", v.symbol());
        }
    }
}
