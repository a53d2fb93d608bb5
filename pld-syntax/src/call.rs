//! The collective macros (`all_reduce!` ... `barrier!`): parsing their arguments against the
//! contract table into a [`CollectiveCall`], with every mistake reported on its own token.

use proc_macro2::Span;
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprUnary, Ident, Lit, Token, UnOp};

use pld_model::{AllReduceMode, Collective, ReduceOp};

use crate::errors::Errors;
use crate::suggest::{list, unknown};

/// A rank count given as `nranks = ...`.
#[derive(Clone, Debug, PartialEq)]
pub enum NRanks {
    /// A positive integer literal.
    Literal(u64),
    /// A path to a constant; its positivity is asserted at compile time, its equality with the
    /// world size at run time.
    Const(syn::Path),
}

/// One collective call site, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveCall {
    /// Which collective.
    pub collective: Collective,
    /// The positional window operands, in contract order.
    pub windows: Vec<Expr>,
    /// `op = ...`, for reducing collectives (absent: sum).
    pub op: Option<ReduceOp>,
    /// `mode = ...`, for all_reduce (absent: mesh).
    pub mode: Option<AllReduceMode>,
    /// `nranks = ...`.
    pub nranks: Option<NRanks>,
    /// `root = ...`, for broadcast.
    pub root: Option<Expr>,
    /// `signal = s` (or barrier's positional signal); absent: a hoisted `__auto_*` signal.
    pub signal: Option<Expr>,
}

/// One raw argument: `expr` or `name = expr`.
enum Arg {
    Positional(Expr),
    Keyword { name: Ident, eq: Token![=], value: Option<Expr> },
}

impl Parse for Arg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Arg> {
        if input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
            let name: Ident = input.parse()?;
            let eq: Token![=] = input.parse()?;
            let value = if input.is_empty() || input.peek(Token![,]) { None } else { Some(input.parse()?) };
            Ok(Arg::Keyword { name, eq, value })
        } else {
            Ok(Arg::Positional(input.parse()?))
        }
    }
}

/// The macro's name as written, for messages (`all_reduce!`).
fn bang(collective: Collective) -> String {
    format!("{}!", collective.name())
}

/// Parses and checks the arguments of `collective`'s macro. `close` is the span of the closing
/// delimiter, where a missing argument is reported.
pub fn parse_call(
    collective: Collective,
    tokens: proc_macro2::TokenStream,
    close: Span,
) -> syn::Result<CollectiveCall> {
    let args = syn::parse::Parser::parse2(Punctuated::<Arg, Token![,]>::parse_terminated, tokens)?;
    let contract = collective.contract();
    let mut errors = Errors::default();
    let mut call = CollectiveCall {
        collective,
        windows: Vec::new(),
        op: None,
        mode: None,
        nranks: None,
        root: None,
        signal: None,
    };
    let mut positional = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut nranks_key: Option<Ident> = None;
    let mut root_value: Option<(i128, Span)> = None;
    let mut keywords_started = false;

    for arg in args {
        match arg {
            Arg::Positional(expr) => {
                if keywords_started {
                    errors.spanned(
                        &expr,
                        format!("{}: positional arguments come before keyword arguments", bang(collective)),
                    );
                } else {
                    positional.push(expr);
                }
            }
            Arg::Keyword { name, eq, value } => {
                keywords_started = true;
                let key = name.to_string();
                if !contract.keywords.contains(&key.as_str()) {
                    errors.spanned(
                        &name,
                        format!("{}: {}", bang(collective), unknown("keyword", &key, contract.keywords)),
                    );
                    continue;
                }
                if seen.contains(&key) {
                    errors.spanned(&name, format!("duplicate keyword `{key}`: each keyword may be given once"));
                    continue;
                }
                seen.push(key.clone());
                let Some(value) = value else {
                    errors.spanned(eq, format!("`{key} =` needs a value"));
                    continue;
                };
                match key.as_str() {
                    "op" => {
                        call.op =
                            word(&mut errors, "op", &value, &ReduceOp::ALL.map(ReduceOp::name), ReduceOp::from_name)
                    }
                    "mode" => {
                        call.mode = word(
                            &mut errors,
                            "mode",
                            &value,
                            &AllReduceMode::ALL.map(AllReduceMode::name),
                            AllReduceMode::from_name,
                        )
                    }
                    "nranks" => {
                        call.nranks = nranks(&mut errors, &value);
                        nranks_key = Some(name);
                    }
                    "root" => {
                        root_value = root(&mut errors, &value);
                        call.root = Some(value);
                    }
                    "signal" => call.signal = Some(value),
                    other => unreachable!("contract keyword `{other}` has no parser"),
                }
            }
        }
    }

    // Positional windows, then barrier's optional positional signal.
    let roles: Vec<&str> = contract.windows.iter().map(|r| r.name()).collect();
    let max = roles.len() + usize::from(contract.positional_signal);
    if positional.len() > max {
        let takes = match (roles.len(), contract.positional_signal) {
            (0, true) => "at most one argument, the signal".to_owned(),
            (n, _) => format!("{n} window{} ({})", if n == 1 { "" } else { "s" }, roles.join(", ")),
        };
        errors.spanned(&positional[max], format!("{} takes {takes}; unexpected argument", bang(collective)));
    } else if positional.len() < roles.len() && errors.is_empty() {
        let missing = &roles[positional.len()..];
        errors.at(
            close,
            format!(
                "{} takes {} window{} ({}); missing {}",
                bang(collective),
                roles.len(),
                if roles.len() == 1 { "" } else { "s" },
                roles.join(", "),
                list(missing)
            ),
        );
    }
    positional.truncate(max);
    if contract.positional_signal && positional.len() == max {
        call.signal = positional.pop();
    }
    call.windows = positional;

    for key in contract.required_keywords {
        if !seen.iter().any(|s| s == key) && errors.is_empty() {
            errors.at(close, format!("{} needs `{key} = ...`", bang(collective)));
        }
    }
    if collective == Collective::AllReduce
        && call.mode.unwrap_or_default() == AllReduceMode::Mesh
        && let Some(key) = &nranks_key
    {
        let why = if call.mode.is_some() { "mode = mesh" } else { "mesh, the default mode," };
        errors.spanned(key, format!("`nranks` applies to `mode = ring` only: {why} uses the world's rank count"));
    }
    if let (Some((root, span)), Some(NRanks::Literal(n))) = (root_value, &call.nranks)
        && root >= i128::from(*n)
    {
        errors.at(span, format!("root {root} is out of range for nranks = {n} (expected 0..{n})"));
    }

    // The windows of one call must be distinct (the signal included).
    let mut operands: Vec<(&str, &Expr)> = roles.iter().copied().zip(&call.windows).collect();
    if let Some(signal) = &call.signal {
        operands.push(("signal", signal));
    }
    for (i, (second, b)) in operands.iter().enumerate() {
        if let Some((first, _)) = operands[..i].iter().find(|(_, a)| same_tokens(a, b)) {
            errors.spanned(
                b,
                format!(
                    "`{}` is passed as both {first} and {second}; the windows of one call must be distinct",
                    b.to_token_stream()
                ),
            );
        }
    }
    errors.finish().map(|()| call)
}

fn same_tokens(a: &Expr, b: &Expr) -> bool {
    a.to_token_stream().to_string() == b.to_token_stream().to_string()
}

/// A keyword whose value is one word out of a fixed set (`op = max`, `mode = ring`).
fn word<T>(
    errors: &mut Errors,
    key: &str,
    value: &Expr,
    names: &[&str],
    parse: impl Fn(&str) -> Option<T>,
) -> Option<T> {
    let word = match value {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(Ident::to_string),
        _ => None,
    };
    let Some(word) = word else {
        errors.spanned(value, format!("`{key}` must be one of {}", list(names)));
        return None;
    };
    let parsed = parse(&word);
    if parsed.is_none() {
        errors.spanned(value, unknown(key, &word, names));
    }
    parsed
}

/// An integer literal, possibly negated: its value and span.
fn integer(value: &Expr) -> Option<syn::Result<(i128, Span)>> {
    match value {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => Some(int.base10_parse::<i128>().map(|v| (v, int.span()))),
        Expr::Unary(ExprUnary { op: UnOp::Neg(_), expr, .. }) => match &**expr {
            Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => {
                Some(int.base10_parse::<i128>().map(|v| (-v, value.span())))
            }
            _ => None,
        },
        _ => None,
    }
}

fn nranks(errors: &mut Errors, value: &Expr) -> Option<NRanks> {
    match integer(value) {
        Some(Ok((n, _))) if n > 0 && n <= i128::from(u32::MAX) => return Some(NRanks::Literal(n as u64)),
        Some(Ok((n, _))) => {
            errors.spanned(value, format!("`nranks` must be a positive rank count, found {n}"));
            return None;
        }
        Some(Err(e)) => {
            errors.push(e);
            return None;
        }
        None => {}
    }
    match value {
        Expr::Path(p) if p.qself.is_none() => Some(NRanks::Const(p.path.clone())),
        Expr::Lit(lit) => {
            errors.spanned(
                value,
                format!("`nranks` must be a positive integer literal or a const, found `{}`", lit.to_token_stream()),
            );
            None
        }
        _ => {
            errors.spanned(
                value,
                "`nranks` must be a positive integer literal or a const; omit it to use the world's rank count",
            );
            None
        }
    }
}

/// Checks a literal root; other expressions are checked at run time.
fn root(errors: &mut Errors, value: &Expr) -> Option<(i128, Span)> {
    match integer(value) {
        Some(Ok((r, span))) if r >= 0 => Some((r, span)),
        Some(Ok((r, _))) => {
            errors.spanned(value, format!("`root` must be a rank, 0 or more, found {r}"));
            None
        }
        Some(Err(e)) => {
            errors.push(e);
            None
        }
        None => {
            if let Expr::Lit(lit) = value {
                errors.spanned(value, format!("`root` must be an integer rank, found `{}`", lit.to_token_stream()));
            }
            None
        }
    }
}
