//! Lowering checked kernels ([`KernelIr`]) to C against the device ABI.
//!
//! Scalars compute in `int64_t` (wrapping, through `uint64_t`) or `double`; elements convert
//! on access (f16/bf16 through the header's converters). Every access is bounds-checked and every
//! primitive's status is propagated, so a kernel bug is a status with a diagnosis, never memory
//! corruption. Tiles live in the rank's scratch, released at the end of the block that made them.

use std::fmt::Write;

use pld_model::DType;

use crate::builtins::storage_type as c_type;
use pld_syntax::kernel::{BinOp, KExpr, KStmt, KernelIr, ParamKind, Place, Prim, TileOp, Ty};

/// The C symbol of a program's kernel.
pub fn kernel_symbol(program: &str, kernel: &str) -> String {
    format!("pld_kernel_{program}__{kernel}")
}

/// An element (lvalue of storage type) read as a scalar of the kernel's arithmetic.
fn read(dtype: DType, lvalue: &str) -> String {
    match dtype {
        DType::F16 => format!("(double)pld_f16_to_f32({lvalue})"),
        DType::BF16 => format!("(double)pld_bf16_to_f32({lvalue})"),
        DType::F8E4M3 => format!("(double)pld_f8e4m3_to_f32({lvalue})"),
        DType::F8E5M2 => format!("(double)pld_f8e5m2_to_f32({lvalue})"),
        DType::F32 | DType::F64 => format!("(double)({lvalue})"),
        _ => format!("(int64_t)({lvalue})"),
    }
}

/// A scalar converted to the storage type of `dtype`.
fn write(dtype: DType, value: &str) -> String {
    match dtype {
        DType::F16 => format!("pld_f32_to_f16((float)({value}))"),
        DType::BF16 => format!("pld_f32_to_bf16((float)({value}))"),
        DType::F8E4M3 => format!("pld_f32_to_f8e4m3((float)({value}))"),
        DType::F8E5M2 => format!("pld_f32_to_f8e5m2((float)({value}))"),
        DType::F32 => format!("(float)({value})"),
        DType::F64 => format!("(double)({value})"),
        other => format!("({})(uint64_t)({value})", c_type(other)),
    }
}

/// C for one kernel of `program`.
pub fn lower_kernel(program: &str, kernel: &KernelIr) -> String {
    let mut l = Lower { kernel, out: String::new(), depth: 1, temp: 0, source_line: 0 };
    let symbol = kernel_symbol(program, &kernel.name);
    let _ = writeln!(l.out, "int32_t {symbol}(pld_ctx *c, const void *args) {{");
    l.line("const uint64_t *w = (const uint64_t *)args;");
    l.line("uint64_t arena = 0; /* scratch bytes in use by live tiles */");
    l.line("(void)w; (void)arena;");
    let mut word = 0;
    for (i, p) in kernel.params.iter().enumerate() {
        match p.kind {
            ParamKind::Tensor { dtype, .. } => {
                let t = c_type(dtype);
                l.line(&format!("{t} *const p{i} = ({t} *)(uintptr_t)w[{word}]; /* {} */", p.name));
                l.line(&format!("const int64_t p{i}_len = (int64_t)w[{}];", word + 1));
                l.line(&format!("(void)p{i}; (void)p{i}_len;"));
                word += 2;
            }
            ParamKind::Window { dtype, .. } => {
                let t = c_type(dtype);
                l.line(&format!("const uint64_t p{i}_off = w[{word}]; /* {} */", p.name));
                l.line(&format!("const int64_t p{i}_len = (int64_t)w[{}];", word + 1));
                l.line(&format!(
                    "if (!pld_in_window(c, p{i}_off, (uint64_t)p{i}_len * sizeof({t}))) return PLD_OUT_OF_BOUNDS;"
                ));
                l.line(&format!("{t} *const p{i} = ({t} *)(c->local_base + p{i}_off);"));
                l.line(&format!("(void)p{i};"));
                word += 2;
            }
            ParamKind::Int(_) => {
                l.line(&format!("const int64_t v_{} = (int64_t)w[{word}];", p.name));
                word += 1;
            }
            ParamKind::Float(_) => {
                l.line(&format!("double v_{}; memcpy(&v_{}, &w[{word}], 8);", p.name, p.name));
                word += 1;
            }
        }
    }
    l.block(&kernel.body);
    l.line("return PLD_OK;");
    l.out.push_str("}\n\n");
    l.out
}

struct Lower<'a> {
    kernel: &'a KernelIr,
    out: String,
    depth: usize,
    temp: usize,
    /// The source line of the statement being lowered, for out-of-bounds diagnoses.
    source_line: u32,
}

impl Lower<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn fresh(&mut self) -> usize {
        self.temp += 1;
        self.temp
    }

    /// A block: tiles made inside are released when it ends.
    fn block(&mut self, stmts: &[KStmt]) {
        let mark = self.fresh();
        self.line("{");
        self.depth += 1;
        self.line(&format!("const uint64_t mark{mark} = arena; (void)mark{mark};"));
        for stmt in stmts {
            self.stmt(stmt);
        }
        self.line(&format!("arena = mark{mark};"));
        self.depth -= 1;
        self.line("}");
    }

    fn param_dtype(&self, i: usize) -> DType {
        self.kernel.params[i].kind.dtype().expect("a data parameter")
    }

    fn window_off(&self, i: usize) -> String {
        format!("p{i}_off")
    }

    /// Checks `[offset, offset + len)` lies in data parameter `param` (`len_of` elements); an
    /// access outside is stopped with a diagnosis naming the line, the buffer and the range.
    fn range_check(&mut self, param: usize, offset: &str, len: &str) {
        let (line, len_of) = (self.source_line, format!("p{param}_len"));
        self.line(&format!(
            "if ({offset} < 0 || {len} < 0 || {offset} > {len_of} || {len} > {len_of} - {offset}) \
             return pld_out_of_bounds(c, {line}, {param}, {offset}, {len}, {len_of});"
        ));
    }

    /// Allocates a tile of `len` elements named `t_{name}` from scratch.
    fn tile(&mut self, name: &str, dtype: DType, len: &str) {
        let t = c_type(dtype);
        self.line(&format!("const int64_t t_{name}_len = {len};"));
        self.line(&format!(
            "if (t_{name}_len < 0 || (uint64_t)t_{name}_len * sizeof({t}) > c->scratch_bytes - arena) return PLD_OUT_OF_BOUNDS;"
        ));
        self.line(&format!("{t} *const t_{name} = ({t} *)(c->scratch + arena);"));
        self.line(&format!("arena += ((uint64_t)t_{name}_len * sizeof({t}) + 63) & ~63ull;"));
    }

    fn stmt(&mut self, stmt: &KStmt) {
        match stmt {
            KStmt::At { line, stmt } => {
                self.source_line = line.0;
                self.stmt(stmt);
            }
            KStmt::Let { name, ty: Ty::Tile(dtype), value } => self.let_tile(name, *dtype, value),
            KStmt::Let { name, ty, value } => {
                let v = self.expr(value);
                let ty = if *ty == Ty::Float { "double" } else { "int64_t" };
                self.line(&format!("{ty} v_{name} = {v}; (void)v_{name};"));
            }
            KStmt::Assign { place: Place::Var(name), value } => {
                let v = self.expr(value);
                self.line(&format!("v_{name} = {v};"));
            }
            KStmt::Assign { place: Place::Elem { base, dtype, index }, value } => {
                let v = self.expr(value);
                let lvalue = self.element(base, index);
                self.line(&format!("{lvalue} = {};", write(*dtype, &v)));
            }
            KStmt::For { var, start, end, body } => {
                let (s, e) = (self.expr(start), self.expr(end));
                self.line(&format!("for (int64_t v_{var} = {s}, end_{var} = {e}; v_{var} < end_{var}; ++v_{var})"));
                self.block(body);
            }
            KStmt::If { cond, then, otherwise } => {
                let c = self.expr(cond);
                self.line(&format!("if ({c})"));
                self.block(then);
                if !otherwise.is_empty() {
                    self.line("else");
                    self.block(otherwise);
                }
            }
            KStmt::Return => self.line("return PLD_OK;"),
            KStmt::Prim(prim) => self.prim(prim),
        }
    }

    fn let_tile(&mut self, name: &str, dtype: DType, value: &KExpr) {
        let t = c_type(dtype);
        match value {
            KExpr::Load { src, offset, len } => {
                let (o, n) = (self.expr(offset), self.expr(len));
                self.tile(name, dtype, &n);
                self.range_check(*src, &o, &format!("t_{name}_len"));
                self.line(&format!("memcpy(t_{name}, p{src} + {o}, (uint64_t)t_{name}_len * sizeof({t}));"));
            }
            KExpr::RemoteLoad { src, peer, offset, len } => {
                let (p, o, n) = (self.expr(peer), self.expr(offset), self.expr(len));
                self.tile(name, dtype, &n);
                self.range_check(*src, &o, &format!("t_{name}_len"));
                let off = self.window_off(*src);
                self.line(&format!(
                    "PLD_TRY(pld_get(c, (int32_t){p}, t_{name}, {off} + (uint64_t){o} * sizeof({t}), (uint64_t)t_{name}_len * sizeof({t})));"
                ));
            }
            KExpr::Tile { op, lhs, rhs, .. } => {
                self.tile(name, dtype, &format!("t_{lhs}_len"));
                self.line(&format!("if (t_{rhs}_len != t_{lhs}_len) return PLD_OUT_OF_BOUNDS;"));
                let (a, b) = (read(dtype, &format!("t_{lhs}[i]")), read(dtype, &format!("t_{rhs}[i]")));
                let v = match (op, dtype.is_float()) {
                    (TileOp::Add, true) => format!("{a} + {b}"),
                    (TileOp::Sub, true) => format!("{a} - {b}"),
                    (TileOp::Mul, true) => format!("{a} * {b}"),
                    (TileOp::Div, true) => format!("{a} / {b}"),
                    (TileOp::Max, true) => format!("pld_max_d({a}, {b})"),
                    (TileOp::Min, true) => format!("pld_min_d({a}, {b})"),
                    (TileOp::Add, false) => format!("pld_wrap_i((uint64_t){a} + (uint64_t){b})"),
                    (TileOp::Sub, false) => format!("pld_wrap_i((uint64_t){a} - (uint64_t){b})"),
                    (TileOp::Mul, false) => format!("pld_wrap_i((uint64_t){a} * (uint64_t){b})"),
                    (TileOp::Div, false) => format!("pld_idiv({a}, {b})"),
                    (TileOp::Max, false) => format!("pld_max_i({a}, {b})"),
                    (TileOp::Min, false) => format!("pld_min_i({a}, {b})"),
                };
                if matches!(op, TileOp::Div) && !dtype.is_float() {
                    self.line(&format!(
                        "for (int64_t i = 0; i < t_{name}_len; ++i) if ({b} == 0) return PLD_KERNEL_FAILED;"
                    ));
                }
                self.line(&format!("for (int64_t i = 0; i < t_{name}_len; ++i) t_{name}[i] = {};", write(dtype, &v)));
            }
            KExpr::Var(other, _) => {
                self.tile(name, dtype, &format!("t_{other}_len"));
                self.line(&format!("memcpy(t_{name}, t_{other}, (uint64_t)t_{name}_len * sizeof({t}));"));
            }
            other => unreachable!("the checker types {other:?} as a scalar"),
        }
    }

    fn prim(&mut self, prim: &Prim) {
        match prim {
            Prim::Store { dst, offset, tile } => {
                let o = self.expr(offset);
                let t = c_type(self.param_dtype(*dst));
                self.range_check(*dst, &o, &format!("t_{tile}_len"));
                self.line(&format!("memcpy(p{dst} + {o}, t_{tile}, (uint64_t)t_{tile}_len * sizeof({t}));"));
            }
            Prim::Fill { dst, dtype, value } => {
                let v = self.expr(value);
                let n = self.fresh();
                let (data, len) = match dst {
                    pld_syntax::kernel::Base::Param(i) => (format!("p{i}"), format!("p{i}_len")),
                    pld_syntax::kernel::Base::Tile(name) => (format!("t_{name}"), format!("t_{name}_len")),
                };
                self.line(&format!("const {} fill{n} = {};", c_type(*dtype), write(*dtype, &v)));
                self.line(&format!("for (int64_t i = 0; i < {len}; ++i) {data}[i] = fill{n};"));
            }
            Prim::RemoteStore { dst, peer, offset, tile, atomic_add } => {
                let (p, o) = (self.expr(peer), self.expr(offset));
                let t = c_type(self.param_dtype(*dst));
                self.range_check(*dst, &o, &format!("t_{tile}_len"));
                let op = if *atomic_add { "PLD_NOTIFY_ADD" } else { "PLD_NOTIFY_SET" };
                let off = self.window_off(*dst);
                self.line(&format!(
                    "PLD_TRY(pld_remote_store(c, (int32_t){p}, {off} + (uint64_t){o} * sizeof({t}), t_{tile}, (uint64_t)t_{tile}_len * sizeof({t}), {op}));"
                ));
            }
            Prim::Put { dst, peer, dst_offset, src, src_offset, len } => {
                let (p, d, s, n) = (self.expr(peer), self.expr(dst_offset), self.expr(src_offset), self.expr(len));
                let t = c_type(self.param_dtype(*dst));
                self.range_check(*dst, &d, &n);
                self.range_check(*src, &s, &n);
                let off = self.window_off(*dst);
                self.line(&format!(
                    "PLD_TRY(pld_put(c, (int32_t){p}, {off} + (uint64_t){d} * sizeof({t}), p{src} + {s}, (uint64_t){n} * sizeof({t})));"
                ));
            }
            Prim::Get { dst, dst_offset, src, peer, src_offset, len } => {
                let (p, d, s, n) = (self.expr(peer), self.expr(dst_offset), self.expr(src_offset), self.expr(len));
                let t = c_type(self.param_dtype(*dst));
                self.range_check(*dst, &d, &n);
                self.range_check(*src, &s, &n);
                let off = self.window_off(*src);
                self.line(&format!(
                    "PLD_TRY(pld_get(c, (int32_t){p}, p{dst} + {d}, {off} + (uint64_t){s} * sizeof({t}), (uint64_t){n} * sizeof({t})));"
                ));
            }
            Prim::Notify { signal, peer, cell, value, add } => {
                let (p, k, v) = (self.expr(peer), self.expr(cell), self.expr(value));
                self.range_check(*signal, &k, "(int64_t)1");
                let op = if *add { "PLD_NOTIFY_ADD" } else { "PLD_NOTIFY_SET" };
                let off = self.window_off(*signal);
                self.line(&format!(
                    "PLD_TRY(pld_notify(c, (int32_t){p}, {off} + 4 * (uint64_t){k}, (int32_t){v}, {op}));"
                ));
            }
            Prim::Wait { signal, cell, value, ge } => {
                let (k, v) = (self.expr(cell), self.expr(value));
                self.range_check(*signal, &k, "(int64_t)1");
                let cmp = if *ge { "PLD_WAIT_GE" } else { "PLD_WAIT_EQ" };
                let off = self.window_off(*signal);
                // A lone cell: a timeout names this cell's peer alone, not every cell of the row
                // still short (the kernel waits on no other).
                self.line(&format!("PLD_TRY(pld_wait(c, {off} + 4 * (uint64_t){k}, (int32_t){v}, {cmp}));"));
            }
        }
    }

    /// An element as an lvalue of its storage type, bounds-checked.
    fn element(&mut self, base: &pld_syntax::kernel::Base, index: &KExpr) -> String {
        let i = self.expr(index);
        let (data, len, buffer) = match base {
            pld_syntax::kernel::Base::Param(p) => (format!("p{p}"), format!("p{p}_len"), *p as i64),
            pld_syntax::kernel::Base::Tile(name) => (format!("t_{name}"), format!("t_{name}_len"), -1),
        };
        let line = self.source_line;
        format!(
            "(*({{ const int64_t i_ = {i}; if (i_ < 0 || i_ >= {len}) \
             return pld_out_of_bounds(c, {line}, {buffer}, i_, 1, {len}); &{data}[i_]; }}))"
        )
    }

    fn expr(&mut self, expr: &KExpr) -> String {
        match expr {
            KExpr::Int(v) => format!("((int64_t){v}ll)"),
            KExpr::Float(v) => format!("({v:?})"),
            KExpr::Bool(b) => (if *b { "1" } else { "0" }).into(),
            KExpr::Var(name, _) => format!("v_{name}"),
            KExpr::Rank => "((int64_t)c->rank)".into(),
            KExpr::NRanks => "((int64_t)c->nranks)".into(),
            KExpr::Len(pld_syntax::kernel::Base::Param(p)) => format!("p{p}_len"),
            KExpr::Len(pld_syntax::kernel::Base::Tile(name)) => format!("t_{name}_len"),
            KExpr::Elem { base, dtype, index } => {
                let lvalue = self.element(base, index);
                read(*dtype, &lvalue)
            }
            KExpr::Binary { op, lhs, rhs, ty } => {
                let (a, b) = (self.expr(lhs), self.expr(rhs));
                let float = *ty == Ty::Float || matches!(ty, Ty::Bool) && self.is_float(lhs);
                match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul if !float => {
                        let o = match op {
                            BinOp::Add => "+",
                            BinOp::Sub => "-",
                            _ => "*",
                        };
                        format!("pld_wrap_i((uint64_t)({a}) {o} (uint64_t)({b}))")
                    }
                    BinOp::Div if !float => format!(
                        "({{ const int64_t d_ = {b}; if (d_ == 0) return PLD_KERNEL_FAILED; pld_idiv({a}, d_); }})"
                    ),
                    BinOp::Rem => format!(
                        "({{ const int64_t d_ = {b}; if (d_ == 0) return PLD_KERNEL_FAILED; pld_irem({a}, d_); }})"
                    ),
                    _ => {
                        let o = match op {
                            BinOp::Add => "+",
                            BinOp::Sub => "-",
                            BinOp::Mul => "*",
                            BinOp::Div => "/",
                            BinOp::Eq => "==",
                            BinOp::Ne => "!=",
                            BinOp::Lt => "<",
                            BinOp::Le => "<=",
                            BinOp::Gt => ">",
                            BinOp::Ge => ">=",
                            BinOp::And => "&&",
                            BinOp::Or => "||",
                            BinOp::Rem => unreachable!(),
                        };
                        format!("({a} {o} {b})")
                    }
                }
            }
            KExpr::Neg(e, Ty::Float) => format!("(-{})", self.expr(e)),
            KExpr::Neg(e, _) => format!("pld_wrap_i(0 - (uint64_t)({}))", self.expr(e)),
            KExpr::Not(e) => format!("(!{})", self.expr(e)),
            KExpr::Cast(e, to) => {
                let v = self.expr(e);
                let from_float = self.is_float(e);
                match (*to, from_float) {
                    ("f32", _) => format!("((double)(float)({v}))"),
                    ("f64", _) => format!("((double)({v}))"),
                    (int, true) => format!("pld_f2i({v}, \"{int}\"[1] == '3' ? 32 : 64, \"{int}\"[0] != 'i')"),
                    ("i32", false) => format!("((int64_t)(int32_t)(uint32_t)({v}))"),
                    ("u32", false) => format!("((int64_t)(uint32_t)({v}))"),
                    (_, false) => format!("((int64_t)({v}))"),
                }
            }
            other => unreachable!("{other:?} is lowered by its statement"),
        }
    }

    fn is_float(&self, e: &KExpr) -> bool {
        match e {
            KExpr::Float(_) | KExpr::Var(_, Ty::Float) | KExpr::Neg(_, Ty::Float) => true,
            KExpr::Binary { ty, lhs, .. } => *ty == Ty::Float || (*ty == Ty::Bool && self.is_float(lhs)),
            KExpr::Elem { dtype, .. } => dtype.is_float(),
            KExpr::Cast(_, to) => to.starts_with('f'),
            _ => false,
        }
    }
}
