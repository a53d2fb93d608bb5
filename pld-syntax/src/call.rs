//! The collective macros (`all_reduce!` ... `barrier!`): parsing their arguments against the
//! contract table into a [`CollectiveCall`], with every mistake reported on its own token.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
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
    /// The scalar of `op = premul_sum(s)`.
    pub scale: Option<Expr>,
    /// `mode = ...`, for all_reduce (absent: mesh).
    pub mode: Option<AllReduceMode>,
    /// `nranks = ...`.
    pub nranks: Option<NRanks>,
    /// `root = ...`, for broadcast.
    pub root: Option<Expr>,
    /// `group = g`: a `pld::Group` or `pld::Groups` expression, or a literal list of world
    /// ranks (`group = [0, 2, 5]`, checked here).
    pub group: Option<Expr>,
    /// `signal = s` (or barrier's positional signal); absent: a hoisted `__auto_*` signal.
    pub signal: Option<Expr>,
    /// `to = r`: send's receiver (required), or recv's own rank.
    pub to: Option<Expr>,
    /// `from = r`: recv's sender (required), or send's own rank.
    pub from: Option<Expr>,
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
/// delimiter, where a missing argument is reported. Every mistake is reported, combined.
pub fn parse_call(
    collective: Collective,
    tokens: proc_macro2::TokenStream,
    close: Span,
) -> syn::Result<CollectiveCall> {
    let args = syn::parse::Parser::parse2(Punctuated::<Arg, Token![,]>::parse_terminated, tokens)?;
    let mut parser = CallParser::new(collective, close);
    let positional = parser.sort(args);
    parser.windows(positional);
    parser.check_required();
    parser.check_combinations();
    parser.check_distinct();
    parser.errors.finish().map(|()| parser.call)
}

/// The state of one call's parse: the call as far as it is known, and every mistake so far.
struct CallParser {
    call: CollectiveCall,
    contract: &'static pld_model::Contract,
    close: Span,
    errors: Errors,
    /// Keywords given, in order.
    seen: Vec<String>,
    /// The `nranks` keyword's token, for a message about it.
    nranks_key: Option<Ident>,
    /// A literal root and its span, checked against a literal `nranks`.
    root_value: Option<(i128, Span)>,
    /// The size of a literal group (`group = [0, 2, 5]`).
    group_size: Option<usize>,
    /// Literal `to`/`from` ranks with their keyword and span, checked against a literal size.
    literal_ranks: Vec<(&'static str, i128, Span)>,
}

impl CallParser {
    fn new(collective: Collective, close: Span) -> CallParser {
        CallParser {
            call: CollectiveCall {
                collective,
                windows: Vec::new(),
                op: None,
                scale: None,
                mode: None,
                nranks: None,
                root: None,
                group: None,
                signal: None,
                to: None,
                from: None,
            },
            contract: collective.contract(),
            close,
            errors: Errors::default(),
            seen: Vec::new(),
            nranks_key: None,
            root_value: None,
            group_size: None,
            literal_ranks: Vec::new(),
        }
    }

    fn bang(&self) -> String {
        bang(self.call.collective)
    }

    /// Takes each keyword argument in and returns the positional ones, which must come first.
    fn sort(&mut self, args: Punctuated<Arg, Token![,]>) -> Vec<Expr> {
        let mut positional = Vec::new();
        let mut keywords_started = false;
        for arg in args {
            match arg {
                Arg::Positional(expr) if keywords_started => self
                    .errors
                    .spanned(&expr, format!("{}: positional arguments come before keyword arguments", self.bang())),
                Arg::Positional(expr) => positional.push(expr),
                Arg::Keyword { name, eq, value } => {
                    keywords_started = true;
                    self.keyword(name, eq, value);
                }
            }
        }
        positional
    }

    /// One `name = value`: known to the contract, given once, with a value of its kind.
    fn keyword(&mut self, name: Ident, eq: Token![=], value: Option<Expr>) {
        let key = name.to_string();
        if !self.contract.keywords.contains(&key.as_str()) {
            let message = format!("{}: {}", self.bang(), unknown("keyword", &key, self.contract.keywords));
            self.errors.spanned(&name, message);
            return;
        }
        if self.seen.contains(&key) {
            self.errors.spanned(&name, format!("duplicate keyword `{key}`: each keyword may be given once"));
            return;
        }
        self.seen.push(key.clone());
        let Some(value) = value else {
            self.errors.spanned(eq, format!("`{key} =` needs a value"));
            return;
        };
        let errors = &mut self.errors;
        match key.as_str() {
            "op" => match &value {
                // `premul_sum(s)`: the op with its scalar.
                Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("premul_sum")) => {
                    if c.args.len() == 1 {
                        self.call.op = Some(ReduceOp::PremulSum);
                        self.call.scale = c.args.first().cloned();
                    } else {
                        errors.spanned(&c.args, "`premul_sum` takes one scalar: `op = premul_sum(s)`");
                    }
                }
                Expr::Path(p) if p.path.is_ident("premul_sum") => {
                    errors.spanned(&value, "`premul_sum` needs its scalar: `op = premul_sum(s)`");
                }
                _ => self.call.op = word(errors, "op", &value, &ReduceOp::ALL.map(ReduceOp::name), ReduceOp::from_name),
            },
            "mode" => {
                let names = AllReduceMode::ALL.map(AllReduceMode::name);
                self.call.mode = word(errors, "mode", &value, &names, AllReduceMode::from_name);
            }
            "nranks" => {
                self.call.nranks = nranks(errors, &value);
                self.nranks_key = Some(name);
            }
            "root" => {
                self.root_value = literal_rank(errors, "root", &value);
                self.call.root = Some(value);
            }
            "signal" => self.call.signal = Some(value),
            "to" | "from" => {
                let key: &'static str = if key == "to" { "to" } else { "from" };
                if let Some((r, span)) = literal_rank(errors, key, &value) {
                    self.literal_ranks.push((key, r, span));
                }
                if key == "to" { self.call.to = Some(value) } else { self.call.from = Some(value) }
            }
            "group" => {
                self.group_size = literal_group(errors, &value);
                self.call.group = Some(value);
            }
            other => unreachable!("contract keyword `{other}` has no parser"),
        }
    }

    /// The positional windows, in contract order, then barrier's optional positional signal.
    fn windows(&mut self, mut positional: Vec<Expr>) {
        let contract = self.contract;
        let roles: Vec<&str> = contract.windows.iter().map(|r| r.name()).collect();
        let max = roles.len() + usize::from(contract.positional_signal);
        if positional.len() > max {
            let takes = match (roles.len(), contract.positional_signal) {
                (0, true) => "at most one argument, the signal".to_owned(),
                (n, _) => format!("{n} window{} ({})", if n == 1 { "" } else { "s" }, roles.join(", ")),
            };
            let message = format!("{} takes {takes}; unexpected argument", self.bang());
            self.errors.spanned(&positional[max], message);
        } else if positional.len() < roles.len() && self.errors.is_empty() {
            let message = format!(
                "{} takes {} window{} ({}); missing {}",
                self.bang(),
                roles.len(),
                if roles.len() == 1 { "" } else { "s" },
                roles.join(", "),
                list(&roles[positional.len()..])
            );
            self.errors.at(self.close, message);
        }
        positional.truncate(max);
        if contract.positional_signal && positional.len() == max {
            self.call.signal = positional.pop();
        }
        self.call.windows = positional;
    }

    /// Keywords the contract requires (reported only when nothing else is wrong).
    fn check_required(&mut self) {
        for key in self.contract.required_keywords {
            if !self.seen.iter().any(|s| s == key) && self.errors.is_empty() {
                self.errors.at(self.close, format!("{} needs `{key} = ...`", self.bang()));
            }
        }
    }

    /// Keywords that are each fine but not together: `nranks` with mesh, a literal root past a
    /// literal `nranks`.
    fn check_combinations(&mut self) {
        let call = &self.call;
        if call.collective == Collective::AllReduce
            && call.mode.unwrap_or_default() != AllReduceMode::Ring
            && let Some(key) = &self.nranks_key
        {
            let why = match call.mode {
                Some(AllReduceMode::Auto) => "mode = auto (which runs mesh)",
                Some(_) => "mode = mesh",
                None => "mesh, the default mode,",
            };
            let message = format!("`nranks` applies to `mode = ring` only: {why} uses the world's rank count");
            self.errors.spanned(key, message);
        }
        if let (Some((root, span)), Some(NRanks::Literal(n))) = (self.root_value, &call.nranks)
            && root >= i128::from(*n)
        {
            self.errors.at(span, format!("root {root} is out of range for nranks = {n} (expected 0..{n})"));
        }
        if let Some(NRanks::Literal(n)) = &call.nranks {
            for &(key, rank, span) in &self.literal_ranks {
                if rank >= i128::from(*n) {
                    self.errors
                        .at(span, format!("`{key} = {rank}` is out of range for nranks = {n} (expected 0..{n})"));
                }
            }
        }

        // A literal group fixes the call's rank count: `nranks` and `root` are in its terms.
        if let Some(size) = self.group_size {
            if let (Some(NRanks::Literal(n)), Some(key)) = (&call.nranks, &self.nranks_key)
                && *n as usize != size
            {
                self.errors.spanned(key, format!("nranks = {n}, but the group has {size} ranks"));
            }
            if let Some((root, span)) = self.root_value
                && root >= size as i128
            {
                self.errors
                    .at(span, format!("root {root} is out of range for a group of {size} ranks (expected 0..{size})"));
            }
            for &(key, rank, span) in &self.literal_ranks {
                if rank >= size as i128 {
                    self.errors.at(
                        span,
                        format!("`{key} = {rank}` is out of range for a group of {size} ranks (expected 0..{size})"),
                    );
                }
            }
        }
    }

    /// The windows of one call must be distinct (the signal included).
    fn check_distinct(&mut self) {
        let roles = self.contract.windows.iter().map(|r| r.name());
        let mut operands: Vec<(&str, &Expr)> = roles.zip(&self.call.windows).collect();
        if let Some(signal) = &self.call.signal {
            operands.push(("signal", signal));
        }
        for (i, (second, b)) in operands.iter().enumerate() {
            if let Some((first, _)) = operands[..i].iter().find(|(_, a)| same_tokens(a, b)) {
                let message = format!(
                    "`{}` is passed as both {first} and {second}; the windows of one call must be distinct",
                    b.to_token_stream()
                );
                self.errors.spanned(b, message);
            }
        }
    }
}

/// A literal group (`[0, 2, 5]`): each rank a non-negative integer, none twice; its size.
/// Anything else is an expression the runtime checks.
fn literal_group(errors: &mut Errors, value: &Expr) -> Option<usize> {
    let Expr::Array(array) = value else { return None };
    let mut seen: Vec<i128> = Vec::new();
    for element in &array.elems {
        match integer(element) {
            Some(Ok((rank, _))) if rank < 0 => {
                errors.spanned(element, format!("a group lists world ranks, 0 or more; found {rank}"));
            }
            Some(Ok((rank, _))) if seen.contains(&rank) => {
                errors.spanned(element, format!("rank {rank} is listed twice: a group has each rank once"));
            }
            Some(Ok((rank, _))) => seen.push(rank),
            Some(Err(e)) => errors.push(e),
            None => {
                errors.spanned(element, "a literal group lists integer world ranks: `group = [0, 2, 5]`");
            }
        }
    }
    if array.elems.is_empty() {
        errors.spanned(array, "a group needs at least one rank");
    }
    Some(array.elems.len())
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

/// Checks a literal rank given as `key = ..` (`root`, `to`, `from`); other expressions are
/// checked at run time.
fn literal_rank(errors: &mut Errors, key: &str, value: &Expr) -> Option<(i128, Span)> {
    match integer(value) {
        Some(Ok((r, span))) if r >= 0 => Some((r, span)),
        Some(Ok((r, _))) => {
            errors.spanned(value, format!("`{key}` must be a rank, 0 or more, found {r}"));
            None
        }
        Some(Err(e)) => {
            errors.push(e);
            None
        }
        None => {
            if let Expr::Lit(lit) = value {
                errors.spanned(value, format!("`{key}` must be an integer rank, found `{}`", lit.to_token_stream()));
            }
            None
        }
    }
}

impl CollectiveCall {
    /// The argument tokens of this call in canonical order: windows, then `op`, `mode`,
    /// `nranks`, `root`, `signal` (barrier's signal is positional).
    pub(crate) fn canonical_tokens(&self) -> TokenStream {
        let call = self;
        let contract = call.collective.contract();
        let mut args: Vec<TokenStream> = call.windows.iter().map(|w| quote!(#w)).collect();
        // A positional signal comes before the keywords (positional arguments come first).
        if let (Some(signal), true) = (&call.signal, contract.positional_signal) {
            args.push(quote!(#signal));
        }
        match (call.op, &call.scale) {
            (Some(ReduceOp::PremulSum), Some(scale)) => args.push(quote!(op = premul_sum(#scale))),
            (Some(op), _) => {
                let op = syn::Ident::new(op.name(), proc_macro2::Span::call_site());
                args.push(quote!(op = #op));
            }
            (None, _) => {}
        }
        if let Some(mode) = call.mode {
            let mode = syn::Ident::new(mode.name(), proc_macro2::Span::call_site());
            args.push(quote!(mode = #mode));
        }
        match &call.nranks {
            Some(NRanks::Literal(n)) => {
                let n = proc_macro2::Literal::u64_unsuffixed(*n);
                args.push(quote!(nranks = #n));
            }
            Some(NRanks::Const(path)) => args.push(quote!(nranks = #path)),
            None => {}
        }
        if let Some(root) = &call.root {
            args.push(quote!(root = #root));
        }
        if let Some(to) = &call.to {
            args.push(quote!(to = #to));
        }
        if let Some(from) = &call.from {
            args.push(quote!(from = #from));
        }
        if let Some(group) = &call.group {
            args.push(quote!(group = #group));
        }
        match &call.signal {
            Some(signal) if !contract.positional_signal => args.push(quote!(signal = #signal)),
            _ => {}
        }
        quote!(#(#args),*)
    }
}
