//! Recognising pld's macros and attributes by name, and where a macro's tokens end.

use proc_macro2::Span;
use syn::{Attribute, Macro, MacroDelimiter};

use pld_model::Collective;

/// A macro of the host DSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DslMacro {
    /// One of the collectives.
    Collective(Collective),
    /// `window!(T, shape)`: allocate a symmetric window.
    Window,
    /// `signal!()`: allocate a signal.
    Signal,
    /// `stage_in!(window, rank, host_data)`: copy host data into a rank's view.
    StageIn,
    /// `stage_out!(window, rank, host_data)`: copy a rank's view out to host data.
    StageOut,
    /// `launch!(kernel(args..), device = r)`: queue a kernel on rank `r`.
    Launch,
}

impl DslMacro {
    /// Every non-collective DSL macro, with its name.
    const OTHERS: [(&'static str, DslMacro); 5] = [
        ("launch", DslMacro::Launch),
        ("window", DslMacro::Window),
        ("signal", DslMacro::Signal),
        ("stage_in", DslMacro::StageIn),
        ("stage_out", DslMacro::StageOut),
    ];

    /// The macro a path names: `all_reduce`, `pld::all_reduce` or `::pld::all_reduce`.
    pub fn from_path(path: &syn::Path) -> Option<DslMacro> {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let name = match segments.as_slice() {
            [name] if path.leading_colon.is_none() => name,
            [krate, name] if krate == "pld" => name,
            _ => return None,
        };
        Collective::from_name(name)
            .map(DslMacro::Collective)
            .or_else(|| Self::OTHERS.iter().find(|(n, _)| n == name).map(|&(_, m)| m))
    }

    /// The macro's name without `!`.
    pub fn name(self) -> &'static str {
        match self {
            DslMacro::Collective(c) => c.name(),
            other => Self::OTHERS.iter().find(|(_, m)| *m == other).map_or("?", |(n, _)| n),
        }
    }
}

/// Whether an attribute is `#[pld::<name>]` (or `#[<name>]` after `use pld::<name>`).
pub(crate) fn is_attr(attr: &Attribute, name: &str) -> bool {
    let path = attr.path();
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segments.as_slice() {
        [only] => only == name,
        [krate, last] => krate == "pld" && last == name,
        _ => false,
    }
}

/// The span of a macro's closing delimiter, where a missing argument is reported.
pub(crate) fn close_span(mac: &Macro) -> Span {
    match &mac.delimiter {
        MacroDelimiter::Paren(p) => p.span.close(),
        MacroDelimiter::Brace(b) => b.span.close(),
        MacroDelimiter::Bracket(b) => b.span.close(),
    }
}
