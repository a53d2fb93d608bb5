//! Checking a `#[pld::kernel]` function against the kernel language and typing it into a
//! [`KernelIr`]. Anything outside the subset is an error on its token.

use std::collections::HashMap;

use syn::{BinOp as SynBin, Expr, FnArg, Lit, Pat, Stmt, Type, UnOp};

use pld_model::DType;

use super::ir::*;
use crate::errors::Errors;
use crate::suggest::{unknown, unknown_element};

/// The functions a kernel may call, for "did you mean".
const FUNCTIONS: &[&str] = &[
    "rank",
    "nranks",
    "len",
    "load",
    "store",
    "fill",
    "add",
    "sub",
    "mul",
    "div",
    "max",
    "min",
    "remote_load",
    "remote_store",
    "put",
    "get",
    "notify",
    "wait",
];

const INTS: [&str; 5] = ["i32", "i64", "u32", "u64", "usize"];
const FLOATS: [&str; 2] = ["f32", "f64"];

fn err(tokens: impl quote::ToTokens, message: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(tokens, message)
}

/// Checks a kernel's signature: its parameters, or every mistake in it.
pub fn check_signature(sig: &syn::Signature) -> syn::Result<Vec<Param>> {
    let mut errors = Errors::default();
    if let Some(t) = &sig.asyncness {
        errors.spanned(t, "a kernel cannot be `async`");
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(&sig.generics, "a kernel cannot be generic; write one kernel per element type");
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        errors.spanned(ty, "a kernel returns nothing: it writes its results into tensors and windows");
    }
    let mut params = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => errors.spanned(r, "a kernel takes no `self`"),
            FnArg::Typed(typed) => match (&*typed.pat, param_kind(&typed.ty)) {
                (Pat::Ident(p), Ok(kind)) => params.push(Param { name: p.ident.to_string(), kind }),
                (Pat::Ident(_), Err(e)) => errors.push(e),
                (pat, _) => errors.spanned(pat, "a kernel parameter is a plain name"),
            },
        }
    }
    errors.finish().map(|()| params)
}

/// Checks a kernel function; every mistake is reported, each on its token.
pub fn check_kernel(func: &syn::ItemFn) -> syn::Result<KernelIr> {
    let params = check_signature(&func.sig)?;
    let mut errors = Errors::default();
    let mut checker = Checker { params: &params, scopes: vec![HashMap::new()], errors: &mut errors, bindings: 0 };
    let body = checker.block(&func.block.stmts);
    errors.finish()?;
    Ok(KernelIr { name: func.sig.ident.to_string(), params, body })
}

fn param_kind(ty: &Type) -> syn::Result<ParamKind> {
    let expected = "a kernel parameter is `&Tensor<T>`, `&mut Tensor<T>`, `&DistributedTensor<T>`, \
                    `&mut DistributedTensor<T>` or an integer or float scalar";
    match ty {
        Type::Reference(r) => {
            let Type::Path(p) = &*r.elem else { return Err(err(ty, expected)) };
            let last = p.path.segments.last().ok_or_else(|| err(ty, expected))?;
            let window = match last.ident.to_string().as_str() {
                "Tensor" => false,
                "DistributedTensor" => true,
                _ => return Err(err(ty, expected)),
            };
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return Err(err(ty, format!("`{}` needs its element type: `{}<f32>`", last.ident, last.ident)));
            };
            let dtype = match args.args.first() {
                Some(syn::GenericArgument::Type(Type::Path(t))) if args.args.len() == 1 => {
                    let name = t.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                    DType::from_name(&name).ok_or_else(|| err(t, unknown_element(&name)))?
                }
                _ => return Err(err(args, "expected one element type, e.g. `<f32>`")),
            };
            let mutable = r.mutability.is_some();
            Ok(if window { ParamKind::Window { dtype, mutable } } else { ParamKind::Tensor { dtype, mutable } })
        }
        Type::Path(p) => {
            let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            if let Some(&int) = INTS.iter().find(|&&n| n == name) {
                Ok(ParamKind::Int(int))
            } else if let Some(&float) = FLOATS.iter().find(|&&n| n == name) {
                Ok(ParamKind::Float(float))
            } else {
                Err(err(ty, expected))
            }
        }
        _ => Err(err(ty, expected)),
    }
}

#[derive(Clone)]
struct Local {
    ty: Ty,
    mutable: bool,
    /// The binding's unique name in the IR: Rust shadows freely, C does not.
    unique: String,
}

struct Checker<'a> {
    params: &'a [Param],
    scopes: Vec<HashMap<String, Local>>,
    errors: &'a mut Errors,
    bindings: usize,
}

/// Placeholder for an expression that failed to check (its error is already recorded).
const POISON: (KExpr, Ty) = (KExpr::Int(0), Ty::Error);

impl Checker<'_> {
    fn block(&mut self, stmts: &[Stmt]) -> Vec<KStmt> {
        self.scopes.push(HashMap::new());
        let out = stmts
            .iter()
            .filter_map(|s| {
                let line = SourceLine(syn::spanned::Spanned::span(s).start().line as u32);
                self.stmt(s).map(|stmt| KStmt::At { line, stmt: Box::new(stmt) })
            })
            .collect();
        self.scopes.pop();
        out
    }

    fn lookup(&self, name: &str) -> Option<Local> {
        self.scopes.iter().rev().find_map(|s| s.get(name).cloned())
    }

    /// Binds `name` in the innermost scope; returns its unique IR name.
    fn bind(&mut self, name: &str, ty: Ty, mutable: bool) -> String {
        self.bindings += 1;
        let unique = format!("{name}_{}", self.bindings);
        let local = Local { ty, mutable, unique: unique.clone() };
        self.scopes.last_mut().expect("a scope").insert(name.to_owned(), local);
        unique
    }

    fn param(&self, name: &str) -> Option<(usize, &Param)> {
        self.params.iter().enumerate().find(|(_, p)| p.name == name)
    }

    fn stmt(&mut self, stmt: &Stmt) -> Option<KStmt> {
        match stmt {
            Stmt::Local(local) => {
                let (name, mutable) = match &local.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                        (p.ident.to_string(), p.mutability.is_some())
                    }
                    other => {
                        self.errors.spanned(other, "a kernel `let` binds a plain name");
                        return None;
                    }
                };
                let Some(init) = &local.init else {
                    self.errors.spanned(local, "a kernel `let` needs a value");
                    return None;
                };
                if let Some((_, diverge)) = &init.diverge {
                    self.errors.spanned(diverge, "`let ... else` is not part of the kernel language");
                }
                let (value, ty) = self.expr(&init.expr);
                if let Ty::Data(_) | Ty::Word = ty {
                    self.errors.spanned(&init.expr, "only scalars and tiles can be bound with `let`");
                }
                let name = self.bind(&name, ty, mutable);
                Some(KStmt::Let { name, ty, value })
            }
            Stmt::Macro(m) => {
                self.errors.push(self.macro_error(&m.mac));
                None
            }
            Stmt::Item(item) => {
                self.errors.spanned(item, "items cannot be declared inside a kernel");
                None
            }
            Stmt::Expr(expr, _) => self.expr_stmt(expr),
        }
    }

    fn macro_error(&self, mac: &syn::Macro) -> syn::Error {
        let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        match name.as_str() {
            "window" | "signal" => err(
                &mac.path,
                format!(
                    "`{name}!` allocates a window, which only host code does: allocate it in a #[pld::host] \
                     function and pass it to the kernel as a `&DistributedTensor<T>` parameter"
                ),
            ),
            "launch" => err(&mac.path, "kernels cannot launch kernels: launch from a #[pld::host] function"),
            _ => err(&mac.path, format!("macros are not part of the kernel language (`{name}!`)")),
        }
    }

    fn expr_stmt(&mut self, expr: &Expr) -> Option<KStmt> {
        match expr {
            Expr::Assign(a) => {
                let place = self.place(&a.left)?;
                let (value, ty) = self.expr(&a.right);
                self.expect_scalar_of(&a.right, ty, self.place_ty(&place));
                Some(KStmt::Assign { place, value })
            }
            Expr::Binary(b) if compound(&b.op).is_some() => {
                let op = compound(&b.op).expect("checked");
                let place = self.place(&b.left)?;
                let (current, current_ty) = self.expr(&b.left);
                let (rhs, rhs_ty) = self.expr(&b.right);
                let ty = self.arith(expr, op, current_ty, rhs_ty);
                let value = KExpr::Binary { op, lhs: Box::new(current), rhs: Box::new(rhs), ty };
                Some(KStmt::Assign { place, value })
            }
            Expr::ForLoop(f) => {
                let Pat::Ident(var) = &*f.pat else {
                    self.errors.spanned(&f.pat, "a kernel `for` binds a plain name");
                    return None;
                };
                let Expr::Range(range) = &*f.expr else {
                    self.errors.spanned(&f.expr, "a kernel `for` loops over a range: `for i in a..b`");
                    return None;
                };
                let (Some(start), Some(end)) = (&range.start, &range.end) else {
                    self.errors.spanned(range, "a kernel range needs both ends: `a..b`");
                    return None;
                };
                if let syn::RangeLimits::Closed(t) = range.limits {
                    self.errors.spanned(t, "use a half-open range `a..b` in a kernel");
                }
                let (start_e, start_t) = self.expr(start);
                let (end_e, end_t) = self.expr(end);
                self.expect(start, start_t, Ty::Int, "a loop bound");
                self.expect(end, end_t, Ty::Int, "a loop bound");
                self.scopes.push(HashMap::new());
                let name = self.bind(&var.ident.to_string(), Ty::Int, false);
                let body = self.block(&f.body.stmts);
                self.scopes.pop();
                Some(KStmt::For { var: name, start: start_e, end: end_e, body })
            }
            Expr::If(i) => {
                let (cond, ty) = self.expr(&i.cond);
                self.expect(&i.cond, ty, Ty::Bool, "a condition");
                let then = self.block(&i.then_branch.stmts);
                let otherwise = match &i.else_branch {
                    None => Vec::new(),
                    Some((_, e)) => match &**e {
                        Expr::Block(b) => self.block(&b.block.stmts),
                        Expr::If(_) => self.expr_stmt(e).into_iter().collect(),
                        other => {
                            self.errors.spanned(other, "expected a block");
                            Vec::new()
                        }
                    },
                };
                Some(KStmt::If { cond, then, otherwise })
            }
            Expr::Block(b) => {
                let body = self.block(&b.block.stmts);
                Some(KStmt::If { cond: KExpr::Bool(true), then: body, otherwise: Vec::new() })
            }
            Expr::Return(r) => {
                if let Some(value) = &r.expr {
                    self.errors.spanned(value, "a kernel returns nothing: write `return;`");
                }
                Some(KStmt::Return)
            }
            Expr::Call(call) => self.prim(call).map(KStmt::Prim),
            Expr::Macro(m) => {
                self.errors.push(self.macro_error(&m.mac));
                None
            }
            Expr::While(w) => {
                self.errors.spanned(
                    w.while_token,
                    "`while` is not part of the kernel language: loop over a range, `for i in a..b`",
                );
                None
            }
            Expr::Loop(l) => {
                self.errors.spanned(
                    l.loop_token,
                    "`loop` is not part of the kernel language: loop over a range, `for i in a..b`",
                );
                None
            }
            other => {
                let (_, ty) = self.expr(other);
                if ty != Ty::Error {
                    self.errors.spanned(other, "this expression does nothing; a kernel statement assigns, loops, branches or calls a primitive");
                }
                None
            }
        }
    }

    fn place_ty(&self, place: &Place) -> Ty {
        match place {
            Place::Var(unique) => {
                self.scopes.iter().flat_map(|s| s.values()).find(|l| &l.unique == unique).map_or(Ty::Error, |l| l.ty)
            }
            Place::Elem { dtype, .. } => scalar_of(*dtype),
        }
    }

    fn place(&mut self, expr: &Expr) -> Option<Place> {
        match expr {
            Expr::Path(p) => {
                let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                match self.lookup(&name) {
                    Some(Local { mutable: true, ty: Ty::Int | Ty::Float | Ty::Bool, unique }) => {
                        Some(Place::Var(unique))
                    }
                    Some(Local { ty: Ty::Tile(_), .. }) => {
                        self.errors.spanned(expr, "assign tile elements (`t[i] = v`) or use `fill`");
                        None
                    }
                    Some(_) => {
                        self.errors.spanned(expr, format!("`{name}` is not `let mut`"));
                        None
                    }
                    None => {
                        self.errors
                            .spanned(expr, format!("cannot assign to `{name}`: assign `let mut` scalars or elements"));
                        None
                    }
                }
            }
            Expr::Index(ix) => {
                let (base, dtype, writable) = self.base(&ix.expr)?;
                if !writable {
                    self.errors.spanned(&ix.expr, "this parameter is read-only: declare it `&mut`");
                }
                let (index, ty) = self.expr(&ix.index);
                self.expect(&ix.index, ty, Ty::Int, "an index");
                Some(Place::Elem { base, dtype, index })
            }
            other => {
                self.errors.spanned(other, "assign to a `let mut` scalar or an element `t[i]`");
                None
            }
        }
    }

    /// A tile variable or data parameter: (base, dtype, writable).
    fn base(&mut self, expr: &Expr) -> Option<(Base, DType, bool)> {
        let Expr::Path(p) = expr else {
            self.errors.spanned(expr, "expected a tile or a tensor parameter");
            return None;
        };
        let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        if let Some(Local { ty: Ty::Tile(dtype), unique, .. }) = self.lookup(&name) {
            return Some((Base::Tile(unique), dtype, true));
        }
        match self.param(&name) {
            Some((
                i,
                Param { kind: ParamKind::Tensor { dtype, mutable } | ParamKind::Window { dtype, mutable }, .. },
            )) => Some((Base::Param(i), *dtype, *mutable)),
            _ => {
                self.errors.spanned(expr, format!("`{name}` is not a tile or a tensor parameter"));
                None
            }
        }
    }

    fn expect(&mut self, at: &Expr, found: Ty, expected: Ty, what: &str) {
        if found != expected && found != Ty::Error {
            self.errors.spanned(at, format!("{what} must be {}, found {}", describe(expected), describe(found)));
        }
    }

    fn expect_scalar_of(&mut self, at: &Expr, found: Ty, expected: Ty) {
        if found != expected && found != Ty::Error && expected != Ty::Error {
            self.errors
                .spanned(at, format!("expected {}, found {} (convert with `as`)", describe(expected), describe(found)));
        }
    }

    fn arith(&mut self, at: &Expr, op: BinOp, l: Ty, r: Ty) -> Ty {
        match (l, r) {
            (Ty::Error, _) | (_, Ty::Error) => Ty::Error,
            (Ty::Int, Ty::Int) => Ty::Int,
            (Ty::Float, Ty::Float) if op != BinOp::Rem => Ty::Float,
            (Ty::Float, Ty::Float) => {
                self.errors.spanned(at, "`%` takes integers");
                Ty::Float
            }
            _ => {
                self.errors
                    .spanned(at, format!("cannot combine {} and {}: convert with `as`", describe(l), describe(r)));
                Ty::Error
            }
        }
    }

    /// Types an expression, reporting what is not part of the kernel language on its token.
    fn expr(&mut self, expr: &Expr) -> (KExpr, Ty) {
        match expr {
            Expr::Lit(lit) => self.literal(&lit.lit),
            Expr::Path(p) => self.path(p),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Unary(u) => self.unary(expr, u),
            Expr::Binary(b) => self.binary(expr, b),
            Expr::Cast(c) => self.cast(c),
            Expr::Index(ix) => {
                let Some((base, dtype, _)) = self.base(&ix.expr) else { return POISON };
                let (index, ty) = self.expr(&ix.index);
                self.expect(&ix.index, ty, Ty::Int, "an index");
                (KExpr::Elem { base, dtype, index: Box::new(index) }, scalar_of(dtype))
            }
            Expr::Call(call) => self.call(call),
            Expr::Macro(m) => {
                self.errors.push(self.macro_error(&m.mac));
                POISON
            }
            Expr::MethodCall(m) => {
                self.errors.spanned(
                    &m.method,
                    "method calls are not part of the kernel language; use functions such as `len(t)`",
                );
                POISON
            }
            Expr::Closure(c) => {
                self.errors.spanned(c, "closures are not part of the kernel language");
                POISON
            }
            Expr::Reference(r) => {
                self.errors
                    .spanned(r.and_token, "references are not part of the kernel language; pass parameters by name");
                POISON
            }
            other => {
                self.errors.spanned(other, "this expression is not part of the kernel language");
                POISON
            }
        }
    }

    fn literal(&mut self, lit: &Lit) -> (KExpr, Ty) {
        match lit {
            Lit::Int(i) => match i.base10_parse::<i64>() {
                Ok(v) => (KExpr::Int(v), Ty::Int),
                Err(e) => {
                    self.errors.push(e);
                    POISON
                }
            },
            Lit::Float(f) => match f.base10_parse::<f64>() {
                Ok(v) => (KExpr::Float(v), Ty::Float),
                Err(e) => {
                    self.errors.push(e);
                    POISON
                }
            },
            Lit::Bool(b) => (KExpr::Bool(b.value), Ty::Bool),
            other => {
                self.errors.spanned(other, "only integer, float and boolean literals exist in a kernel");
                POISON
            }
        }
    }

    /// A name: a local, a wait/notify constant, or a parameter.
    fn path(&mut self, p: &syn::ExprPath) -> (KExpr, Ty) {
        let Some(ident) = p.path.get_ident() else {
            self.errors.spanned(p, "paths are not part of the kernel language");
            return POISON;
        };
        let name = ident.to_string();
        if let Some(local) = self.lookup(&name) {
            return (KExpr::Var(local.unique, local.ty), local.ty);
        }
        match name.as_str() {
            "Set" | "AtomicAdd" | "Eq" | "Ge" => return (KExpr::Var(name, Ty::Word), Ty::Word),
            _ => {}
        }
        match self.param(&name) {
            Some((_, Param { kind: ParamKind::Int(_), .. })) => (KExpr::Var(name, Ty::Int), Ty::Int),
            Some((_, Param { kind: ParamKind::Float(_), .. })) => (KExpr::Var(name, Ty::Float), Ty::Float),
            Some((i, _)) => (KExpr::Var(name, Ty::Data(i)), Ty::Data(i)),
            None => {
                let mut known: Vec<&str> = self.scopes.iter().flat_map(|s| s.keys().map(String::as_str)).collect();
                known.extend(self.params.iter().map(|p| p.name.as_str()));
                self.errors.spanned(p, unknown("name", &name, &known));
                POISON
            }
        }
    }

    fn unary(&mut self, expr: &Expr, u: &syn::ExprUnary) -> (KExpr, Ty) {
        let (e, ty) = self.expr(&u.expr);
        match (&u.op, ty) {
            (_, Ty::Error) => POISON,
            (UnOp::Neg(_), Ty::Int | Ty::Float) => (KExpr::Neg(Box::new(e), ty), ty),
            (UnOp::Not(_), Ty::Bool) => (KExpr::Not(Box::new(e)), Ty::Bool),
            (UnOp::Deref(t), _) => {
                self.errors.spanned(t, "there are no references to dereference in a kernel");
                POISON
            }
            _ => {
                self.errors.spanned(expr, format!("this operator does not apply to {}", describe(ty)));
                POISON
            }
        }
    }

    fn binary(&mut self, expr: &Expr, b: &syn::ExprBinary) -> (KExpr, Ty) {
        let Some(op) = binop(&b.op) else {
            self.errors.spanned(b.op, "this operator is not part of the kernel language");
            return POISON;
        };
        let (l, lt) = self.expr(&b.left);
        let (r, rt) = self.expr(&b.right);
        let ty = match op {
            BinOp::And | BinOp::Or => {
                self.expect(&b.left, lt, Ty::Bool, "an operand of && and ||");
                self.expect(&b.right, rt, Ty::Bool, "an operand of && and ||");
                Ty::Bool
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                self.arith(expr, BinOp::Add, lt, rt);
                Ty::Bool
            }
            _ => self.arith(expr, op, lt, rt),
        };
        (KExpr::Binary { op, lhs: Box::new(l), rhs: Box::new(r), ty }, ty)
    }

    /// `e as T`, to an integer or float scalar type.
    fn cast(&mut self, c: &syn::ExprCast) -> (KExpr, Ty) {
        let (e, ty) = self.expr(&c.expr);
        if !matches!(ty, Ty::Int | Ty::Float | Ty::Error) {
            self.errors.spanned(&c.expr, format!("cannot cast {}", describe(ty)));
        }
        let target = match &*c.ty {
            Type::Path(p) => p.path.get_ident().map(|i| i.to_string()).unwrap_or_default(),
            _ => String::new(),
        };
        if let Some(&int) = INTS.iter().find(|&&n| n == target) {
            (KExpr::Cast(Box::new(e), int), Ty::Int)
        } else if let Some(&float) = FLOATS.iter().find(|&&n| n == target) {
            (KExpr::Cast(Box::new(e), float), Ty::Float)
        } else {
            self.errors.spanned(&c.ty, "a kernel casts to an integer or float scalar type");
            POISON
        }
    }

    fn args<'e>(
        &mut self,
        call: &'e syn::ExprCall,
        name: &str,
        n: std::ops::RangeInclusive<usize>,
    ) -> Option<Vec<&'e Expr>> {
        let args: Vec<&Expr> = call.args.iter().collect();
        if !n.contains(&args.len()) {
            let expected =
                if n.start() == n.end() { n.start().to_string() } else { format!("{} or {}", n.start(), n.end()) };
            self.errors.spanned(call, format!("`{name}` takes {expected} argument(s), found {}", args.len()));
            return None;
        }
        Some(args)
    }

    fn int(&mut self, e: &Expr, what: &str) -> KExpr {
        let (k, ty) = self.expr(e);
        self.expect(e, ty, Ty::Int, what);
        k
    }

    /// A data parameter argument: (index, dtype, is window, mutable).
    fn data(&mut self, e: &Expr, need_window: bool, need_mut: bool) -> Option<(usize, DType)> {
        let (_, ty) = self.expr(e);
        let Ty::Data(i) = ty else {
            if ty != Ty::Error {
                let want = if need_window { "a `&DistributedTensor` parameter" } else { "a tensor parameter" };
                self.errors.spanned(e, format!("expected {want}, found {}", describe(ty)));
            }
            return None;
        };
        let (window, mutable, dtype) = match self.params[i].kind {
            ParamKind::Window { dtype, mutable } => (true, mutable, dtype),
            ParamKind::Tensor { dtype, mutable } => (false, mutable, dtype),
            _ => unreachable!("Ty::Data names data parameters"),
        };
        if need_window && !window {
            self.errors.spanned(e, "expected a `&DistributedTensor` parameter: peers reach windows only");
        }
        if need_mut && !mutable {
            self.errors.spanned(e, "this parameter is read-only: declare it `&mut`");
        }
        Some((i, dtype))
    }

    fn tile(&mut self, e: &Expr) -> Option<(String, DType)> {
        match self.expr(e) {
            (KExpr::Var(name, Ty::Tile(d)), _) => Some((name, d)),
            (_, Ty::Error) => None,
            (_, Ty::Tile(_)) => {
                let message = "tile operations take tile variables: bind this tile with `let` first \
                               (`let u = ...; store(data, 0, u);`)";
                self.errors.spanned(e, message);
                None
            }
            (_, ty) => {
                self.errors.spanned(e, format!("expected a tile variable, found {}", describe(ty)));
                None
            }
        }
    }

    fn word(&mut self, e: &Expr, accepted: [&str; 2]) -> bool {
        match e {
            Expr::Path(p) if p.path.get_ident().is_some_and(|i| accepted.contains(&i.to_string().as_str())) => {
                p.path.is_ident(accepted[1])
            }
            other => {
                let word = quote::ToTokens::to_token_stream(other).to_string();
                self.errors.spanned(other, unknown("mode", &word, &accepted));
                false
            }
        }
    }

    fn callee(&mut self, call: &syn::ExprCall) -> Option<String> {
        match &*call.func {
            Expr::Path(p) if p.path.get_ident().is_some() => Some(p.path.get_ident().expect("checked").to_string()),
            other => {
                self.errors.spanned(other, "a kernel calls primitives by name");
                None
            }
        }
    }

    /// A call in expression position.
    fn call(&mut self, call: &syn::ExprCall) -> (KExpr, Ty) {
        let Some(name) = self.callee(call) else { return POISON };
        let tile_op = match name.as_str() {
            "add" => Some(TileOp::Add),
            "sub" => Some(TileOp::Sub),
            "mul" => Some(TileOp::Mul),
            "div" => Some(TileOp::Div),
            "max" => Some(TileOp::Max),
            "min" => Some(TileOp::Min),
            _ => None,
        };
        if let Some(op) = tile_op {
            let Some(a) = self.args(call, &name, 2..=2) else { return POISON };
            let (Some((l, ld)), Some((r, rd))) = (self.tile(a[0]), self.tile(a[1])) else { return POISON };
            if ld != rd {
                self.errors.spanned(call, format!("`{name}` takes two tiles of one element type, found {ld} and {rd}"));
            }
            return (KExpr::Tile { op, lhs: l, rhs: r, dtype: ld }, Ty::Tile(ld));
        }
        match name.as_str() {
            "rank" | "nranks" => {
                if self.args(call, &name, 0..=0).is_none() {
                    return POISON;
                }
                (if name == "rank" { KExpr::Rank } else { KExpr::NRanks }, Ty::Int)
            }
            "world_size" => {
                self.errors
                    .spanned(&call.func, "`world_size()` is host code; in a kernel the rank count is `nranks()`");
                POISON
            }
            "len" => {
                let Some(a) = self.args(call, &name, 1..=1) else { return POISON };
                match self.base(a[0]) {
                    Some((base, _, _)) => (KExpr::Len(base), Ty::Int),
                    None => POISON,
                }
            }
            "load" => {
                let Some(a) = self.args(call, &name, 3..=3) else { return POISON };
                let data = self.data(a[0], false, false);
                let (offset, len) = (self.int(a[1], "an offset"), self.int(a[2], "a length"));
                match data {
                    Some((src, dtype)) => {
                        (KExpr::Load { src, offset: Box::new(offset), len: Box::new(len) }, Ty::Tile(dtype))
                    }
                    None => POISON,
                }
            }
            "remote_load" => {
                let Some(a) = self.args(call, &name, 4..=4) else { return POISON };
                let data = self.data(a[0], true, false);
                let peer = self.int(a[1], "a peer");
                let (offset, len) = (self.int(a[2], "an offset"), self.int(a[3], "a length"));
                match data {
                    Some((src, dtype)) => (
                        KExpr::RemoteLoad { src, peer: Box::new(peer), offset: Box::new(offset), len: Box::new(len) },
                        Ty::Tile(dtype),
                    ),
                    None => POISON,
                }
            }
            "store" | "fill" | "remote_store" | "put" | "get" | "notify" | "wait" => {
                self.errors.spanned(call, format!("`{name}` returns nothing: call it as a statement"));
                POISON
            }
            _ => {
                self.errors.spanned(&call.func, unknown("kernel function", &name, FUNCTIONS));
                POISON
            }
        }
    }

    /// A primitive in statement position.
    fn prim(&mut self, call: &syn::ExprCall) -> Option<Prim> {
        let name = self.callee(call)?;
        match name.as_str() {
            "store" => {
                let a = self.args(call, &name, 3..=3)?;
                let dst = self.data(a[0], false, true);
                let offset = self.int(a[1], "an offset");
                let tile = self.tile(a[2]);
                let ((dst, dd), (tile, td)) = (dst?, tile?);
                if dd != td {
                    self.errors.spanned(a[2], format!("a {td} tile cannot be stored into {dd} data"));
                }
                Some(Prim::Store { dst, offset, tile })
            }
            "fill" => {
                let a = self.args(call, &name, 2..=2)?;
                let (dst, dtype, writable) = self.base(a[0])?;
                if !writable {
                    self.errors.spanned(a[0], "this parameter is read-only: declare it `&mut`");
                }
                let (value, ty) = self.expr(a[1]);
                self.expect_scalar_of(a[1], ty, scalar_of(dtype));
                Some(Prim::Fill { dst, dtype, value })
            }
            "remote_store" => {
                let a = self.args(call, &name, 4..=5)?;
                let dst = self.data(a[0], true, false);
                let peer = self.int(a[1], "a peer");
                let offset = self.int(a[2], "an offset");
                let tile = self.tile(a[3]);
                let atomic_add = a.get(4).is_some_and(|w| self.word(w, ["Set", "AtomicAdd"]));
                let ((dst, dd), (tile, td)) = (dst?, tile?);
                if dd != td {
                    self.errors.spanned(a[3], format!("a {td} tile cannot be stored into a {dd} window"));
                }
                if atomic_add && dd != DType::I32 {
                    self.errors.spanned(a[4], format!("atomic adds are defined on i32 windows, this one holds {dd}"));
                }
                Some(Prim::RemoteStore { dst, peer, offset, tile, atomic_add })
            }
            "put" => {
                let a = self.args(call, &name, 6..=6)?;
                let dst = self.data(a[0], true, false);
                let peer = self.int(a[1], "a peer");
                let dst_offset = self.int(a[2], "an offset");
                let src = self.data(a[3], false, false);
                let (src_offset, len) = (self.int(a[4], "an offset"), self.int(a[5], "a length"));
                let ((dst, dd), (src, sd)) = (dst?, src?);
                if dd != sd {
                    self.errors.spanned(a[3], format!("`put` copies between one element type, found {sd} into {dd}"));
                }
                Some(Prim::Put { dst, peer, dst_offset, src, src_offset, len })
            }
            "get" => {
                let a = self.args(call, &name, 6..=6)?;
                let dst = self.data(a[0], false, true);
                let dst_offset = self.int(a[1], "an offset");
                let src = self.data(a[2], true, false);
                let peer = self.int(a[3], "a peer");
                let (src_offset, len) = (self.int(a[4], "an offset"), self.int(a[5], "a length"));
                let ((dst, dd), (src, sd)) = (dst?, src?);
                if dd != sd {
                    self.errors.spanned(a[2], format!("`get` copies between one element type, found {sd} into {dd}"));
                }
                Some(Prim::Get { dst, dst_offset, src, peer, src_offset, len })
            }
            "notify" => {
                let a = self.args(call, &name, 5..=5)?;
                let signal = self.signal(a[0]);
                let peer = self.int(a[1], "a peer");
                let cell = self.int(a[2], "a cell");
                let value = self.int(a[3], "a signal value");
                let add = self.word(a[4], ["Set", "AtomicAdd"]);
                Some(Prim::Notify { signal: signal?, peer, cell, value, add })
            }
            "wait" => {
                let a = self.args(call, &name, 4..=4)?;
                let signal = self.signal(a[0]);
                let cell = self.int(a[1], "a cell");
                let value = self.int(a[2], "a signal value");
                let ge = self.word(a[3], ["Eq", "Ge"]);
                Some(Prim::Wait { signal: signal?, cell, value, ge })
            }
            "rank" | "nranks" | "len" | "load" | "remote_load" | "add" | "sub" | "mul" | "div" | "max" | "min" => {
                self.errors.spanned(call, format!("the result of `{name}` is unused: bind it with `let`"));
                None
            }
            _ => {
                self.call(call); // reports the unknown name
                None
            }
        }
    }

    fn signal(&mut self, e: &Expr) -> Option<usize> {
        let (i, dtype) = self.data(e, true, false)?;
        if dtype != DType::I32 {
            self.errors.spanned(e, format!("a signal is an i32 window, this one holds {dtype}"));
        }
        Some(i)
    }
}

fn scalar_of(dtype: DType) -> Ty {
    if dtype.is_float() { Ty::Float } else { Ty::Int }
}

fn describe(ty: Ty) -> String {
    match ty {
        Ty::Int => "an integer".into(),
        Ty::Float => "a float".into(),
        Ty::Bool => "a condition".into(),
        Ty::Tile(d) => format!("a {d} tile"),
        Ty::Data(_) => "a tensor parameter".into(),
        Ty::Word => "a mode word".into(),
        Ty::Error => "an erroneous expression".into(),
    }
}

fn binop(op: &SynBin) -> Option<BinOp> {
    Some(match op {
        SynBin::Add(_) => BinOp::Add,
        SynBin::Sub(_) => BinOp::Sub,
        SynBin::Mul(_) => BinOp::Mul,
        SynBin::Div(_) => BinOp::Div,
        SynBin::Rem(_) => BinOp::Rem,
        SynBin::Eq(_) => BinOp::Eq,
        SynBin::Ne(_) => BinOp::Ne,
        SynBin::Lt(_) => BinOp::Lt,
        SynBin::Le(_) => BinOp::Le,
        SynBin::Gt(_) => BinOp::Gt,
        SynBin::Ge(_) => BinOp::Ge,
        SynBin::And(_) => BinOp::And,
        SynBin::Or(_) => BinOp::Or,
        _ => return None,
    })
}

fn compound(op: &SynBin) -> Option<BinOp> {
    Some(match op {
        SynBin::AddAssign(_) => BinOp::Add,
        SynBin::SubAssign(_) => BinOp::Sub,
        SynBin::MulAssign(_) => BinOp::Mul,
        SynBin::DivAssign(_) => BinOp::Div,
        SynBin::RemAssign(_) => BinOp::Rem,
        _ => return None,
    })
}
