//! The kernel IR: a typed, checked form of a `#[pld::kernel]` function, ready for lowering.

use pld_model::DType;

/// A parameter of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// `&Tensor<T>` / `&mut Tensor<T>`: host data of one rank, passed at launch.
    Tensor {
        /// Element type.
        dtype: DType,
        /// Whether the kernel may write it.
        mutable: bool,
    },
    /// `&DistributedTensor<T>` / `&mut DistributedTensor<T>`: a window view, local and on peers.
    Window {
        /// Element type.
        dtype: DType,
        /// Whether the kernel may write its local view.
        mutable: bool,
    },
    /// An integer scalar (`i32`, `i64`, `u32`, `u64`, `usize`).
    Int(&'static str),
    /// A float scalar (`f32`, `f64`).
    Float(&'static str),
}

impl ParamKind {
    /// The element type of a data parameter.
    pub fn dtype(&self) -> Option<DType> {
        match self {
            ParamKind::Tensor { dtype, .. } | ParamKind::Window { dtype, .. } => Some(*dtype),
            _ => None,
        }
    }
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: ParamKind,
}

/// The type of a kernel expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// 64-bit signed integer arithmetic.
    Int,
    /// Double-precision arithmetic.
    Float,
    /// A condition.
    Bool,
    /// A tile: a private buffer of elements.
    Tile(DType),
    /// A data parameter (by index).
    Data(usize),
    /// A `Set`/`AtomicAdd`/`Eq`/`Ge` word.
    Word,
    /// An expression that failed to check: compatible with everything, so one mistake is
    /// reported once (never lowered: a kernel with errors is not compiled).
    Error,
}

/// Something indexable: a data parameter or a tile variable.
#[derive(Clone, Debug, PartialEq)]
pub enum Base {
    /// Data parameter by index.
    Param(usize),
    /// A tile variable.
    Tile(String),
}

/// Element-wise tile operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileOp {
    /// `add(a, b)`.
    Add,
    /// `sub(a, b)`.
    Sub,
    /// `mul(a, b)`.
    Mul,
    /// `div(a, b)`.
    Div,
    /// `max(a, b)`.
    Max,
    /// `min(a, b)`.
    Min,
}

/// Scalar binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    And,
    /// `||`
    Or,
}

/// A typed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum KExpr {
    /// Integer literal.
    Int(i64),
    /// Float literal.
    Float(f64),
    /// Boolean literal.
    Bool(bool),
    /// A scalar variable or scalar parameter.
    Var(String, Ty),
    /// `rank()`.
    Rank,
    /// `nranks()`.
    NRanks,
    /// `len(x)`: elements of a data parameter or tile.
    Len(Base),
    /// `x[i]`: one element, as a scalar of the element type's arithmetic.
    Elem {
        /// What is indexed.
        base: Base,
        /// Its element type.
        dtype: DType,
        /// The index.
        index: Box<KExpr>,
    },
    /// `a op b`.
    Binary {
        /// Operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<KExpr>,
        /// Right operand.
        rhs: Box<KExpr>,
        /// Result type.
        ty: Ty,
    },
    /// `-a`.
    Neg(Box<KExpr>, Ty),
    /// `!a`.
    Not(Box<KExpr>),
    /// `a as T` (T a scalar type name).
    Cast(Box<KExpr>, &'static str),
    /// `load(src, offset, len)`: a tile copied from local data.
    Load {
        /// The data parameter.
        src: usize,
        /// First element.
        offset: Box<KExpr>,
        /// Elements.
        len: Box<KExpr>,
    },
    /// `remote_load(src, peer, offset, len)`: a tile copied from a peer's window.
    RemoteLoad {
        /// The window parameter.
        src: usize,
        /// The peer.
        peer: Box<KExpr>,
        /// First element.
        offset: Box<KExpr>,
        /// Elements.
        len: Box<KExpr>,
    },
    /// `op(a, b)` on tiles of one dtype.
    Tile {
        /// The operation.
        op: TileOp,
        /// Left tile variable.
        lhs: String,
        /// Right tile variable.
        rhs: String,
        /// Element type.
        dtype: DType,
    },
}

/// Where an assignment writes.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// A `let mut` scalar.
    Var(String),
    /// An element of a tile or mutable data parameter.
    Elem {
        /// What is indexed.
        base: Base,
        /// Its element type.
        dtype: DType,
        /// The index.
        index: KExpr,
    },
}

/// A primitive used as a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Prim {
    /// `store(dst, offset, tile)`.
    Store {
        /// Destination parameter.
        dst: usize,
        /// First element.
        offset: KExpr,
        /// Tile variable.
        tile: String,
    },
    /// `fill(tile_or_data, value)`.
    Fill {
        /// What is filled.
        dst: Base,
        /// Element type.
        dtype: DType,
        /// The value.
        value: KExpr,
    },
    /// `remote_store(dst, peer, offset, tile[, AtomicAdd])`.
    RemoteStore {
        /// Destination window parameter.
        dst: usize,
        /// The peer.
        peer: KExpr,
        /// First element.
        offset: KExpr,
        /// Tile variable.
        tile: String,
        /// Atomic add instead of a plain store.
        atomic_add: bool,
    },
    /// `put(dst, peer, dst_offset, src, src_offset, len)`.
    Put {
        /// Destination window.
        dst: usize,
        /// The peer.
        peer: KExpr,
        /// Destination element.
        dst_offset: KExpr,
        /// Local source parameter.
        src: usize,
        /// Source element.
        src_offset: KExpr,
        /// Elements.
        len: KExpr,
    },
    /// `get(dst, dst_offset, src, peer, src_offset, len)`.
    Get {
        /// Local destination parameter.
        dst: usize,
        /// Destination element.
        dst_offset: KExpr,
        /// Source window.
        src: usize,
        /// The peer.
        peer: KExpr,
        /// Source element.
        src_offset: KExpr,
        /// Elements.
        len: KExpr,
    },
    /// `notify(signal, peer, cell, value, Set|AtomicAdd)`.
    Notify {
        /// Signal window.
        signal: usize,
        /// The peer.
        peer: KExpr,
        /// Cell index.
        cell: KExpr,
        /// The value.
        value: KExpr,
        /// Atomic add instead of set.
        add: bool,
    },
    /// `wait(signal, cell, value, Eq|Ge)`.
    Wait {
        /// Signal window.
        signal: usize,
        /// Cell index.
        cell: KExpr,
        /// The value.
        value: KExpr,
        /// `>=` instead of `==`.
        ge: bool,
    },
}

/// Where a statement is in its source file: its line, for diagnoses of the compiled kernel (an
/// access out of bounds names it). Not part of the kernel's meaning: any two are equal, and the
/// IR's `Debug` form (which the content hash is computed from) prints `_`, so the program macro
/// (which may not see lines) and the build script (which does) compute the same hash.
#[derive(Clone, Copy)]
pub struct SourceLine(pub u32);

impl std::fmt::Debug for SourceLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("_")
    }
}

impl PartialEq for SourceLine {
    fn eq(&self, _: &SourceLine) -> bool {
        true
    }
}

/// A typed statement.
#[derive(Clone, Debug, PartialEq)]
pub enum KStmt {
    /// A statement and the source line it was written on.
    At {
        /// The line (1-based; 0 where the source's lines are unknown).
        line: SourceLine,
        /// The statement.
        stmt: Box<KStmt>,
    },
    /// `let [mut] name = value;`
    Let {
        /// The binding.
        name: String,
        /// Its type.
        ty: Ty,
        /// The value.
        value: KExpr,
    },
    /// `place = value;` (compound assignments are expanded).
    Assign {
        /// The target.
        place: Place,
        /// The value.
        value: KExpr,
    },
    /// `for var in start..end { body }`.
    For {
        /// The loop variable.
        var: String,
        /// First value.
        start: KExpr,
        /// End (exclusive).
        end: KExpr,
        /// Body.
        body: Vec<KStmt>,
    },
    /// `if cond { then } else { otherwise }`.
    If {
        /// Condition.
        cond: KExpr,
        /// Then branch.
        then: Vec<KStmt>,
        /// Else branch.
        otherwise: Vec<KStmt>,
    },
    /// A primitive.
    Prim(Prim),
    /// `return;`
    Return,
}

/// A checked kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelIr {
    /// The kernel's name.
    pub name: String,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Its body.
    pub body: Vec<KStmt>,
}
