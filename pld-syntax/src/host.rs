//! Host functions: parsing their bodies into canonical form.
//!
//! Canonical form makes every implicit thing explicit so that expansion and printing are plain
//! functions of it: each collective call site without `signal = ...` gets one, naming a signal
//! `__auto_<op>_<n>` that is hoisted to the start of the function (allocated once per call
//! site, however often the site runs). A mistake at a call site is reported on its token and
//! the site is replaced by that error alone, so the rest of the program still expands and rustc
//! reports nothing else about it.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::visit_mut::{self, VisitMut};
use syn::{Attribute, Block, Expr, ExprMacro, Ident, Local, Macro, Pat, Signature, Stmt, Visibility};

use pld_model::Collective;

use crate::alloc;
use crate::call::{CollectiveCall, parse_call};
use crate::dsl::{DslMacro, close_span, is_attr};
use crate::errors::Errors;
use crate::launch::{Kernels, parse_launch};

/// A `#[pld::host]` function in canonical form.
#[derive(Clone, Debug, PartialEq)]
pub struct HostFn {
    /// Attributes other than `#[pld::host]` (doc comments among them).
    pub attrs: Vec<Attribute>,
    /// Visibility.
    pub vis: Visibility,
    /// The signature as the user wrote it.
    pub sig: Signature,
    /// Signals hoisted to the start of the function, one per call site that had none, in order.
    pub hoisted: Vec<Hoisted>,
    /// The body, with every collective given its signal explicitly.
    pub body: Block,
}

/// A signal allocated at the start of a host function for one call site.
#[derive(Clone, Debug, PartialEq)]
pub struct Hoisted {
    /// The binding, `__auto_<op>_<n>`.
    pub name: Ident,
    /// The collective of the call site it serves.
    pub collective: Collective,
}

/// Numbering of hoisted signals, per collective, across a program.
#[derive(Default)]
pub(crate) struct AutoNames {
    next: Vec<(Collective, usize)>,
}

impl AutoNames {
    fn next(&mut self, collective: Collective) -> Ident {
        let n = match self.next.iter_mut().find(|(c, _)| *c == collective) {
            Some((_, n)) => {
                *n += 1;
                *n - 1
            }
            None => {
                self.next.push((collective, 1));
                0
            }
        };
        format_ident!("__auto_{}_{}", collective.name(), n)
    }

    /// Keeps numbering past names already present (a program printed and parsed again).
    fn reserve(&mut self, collective: Collective, n: usize) {
        match self.next.iter_mut().find(|(c, _)| *c == collective) {
            Some((_, next)) => *next = (*next).max(n + 1),
            None => self.next.push((collective, n + 1)),
        }
    }
}

/// `__auto_<collective>_<n>` → (collective, n).
pub(crate) fn parse_auto_name(name: &str) -> Option<(Collective, usize)> {
    let rest = name.strip_prefix("__auto_")?;
    let (collective, n) = rest.rsplit_once('_')?;
    Some((Collective::from_name(collective)?, n.parse().ok()?))
}

/// Parses one host function. A signature that cannot be a host function is an error (the
/// function is dropped); mistakes at call sites go to `errors` and stay embedded in the body.
pub(crate) fn parse_host_fn(
    func: syn::ItemFn,
    kernels: &Kernels,
    names: &mut AutoNames,
    errors: &mut Errors,
) -> syn::Result<HostFn> {
    let syn::ItemFn { attrs, vis, sig, block, .. } = func;
    let mut signature = Errors::default();
    if let Some(receiver) = sig.receiver() {
        signature.spanned(receiver, "a host function takes no `self`: it runs once, on the host, for the whole world");
    }
    if let Some(asyncness) = &sig.asyncness {
        signature.spanned(asyncness, "a host function cannot be `async`");
    }
    if let Some(param) = sig.generics.type_params().next() {
        signature.spanned(param, "a host function cannot be generic over types");
    }
    signature.finish()?;
    let attrs = attrs.into_iter().filter(|a| !is_attr(a, "host")).collect();
    let mut body = *block;

    // Hoisted signals already written out (a printed program parsed again) are taken back.
    let mut hoisted = Vec::new();
    while let Some(Stmt::Local(local)) = body.stmts.first() {
        let Some((name, collective)) = hoisted_binding(local) else { break };
        if let Some((_, n)) = parse_auto_name(&name.to_string()) {
            names.reserve(collective, n);
        }
        hoisted.push(Hoisted { name, collective });
        body.stmts.remove(0);
    }
    let mut canon =
        CheckAndHoist { names, poisoned: Vec::new(), in_closure: false, errors, hoisted: Vec::new(), kernels };
    canon.visit_block_mut(&mut body);
    hoisted.extend(canon.hoisted);
    Ok(HostFn { attrs, vis, sig, hoisted, body })
}

/// `let __auto_<op>_<n> = signal!();`
fn hoisted_binding(local: &Local) -> Option<(Ident, Collective)> {
    let Pat::Ident(pat) = &local.pat else { return None };
    let (collective, _) = parse_auto_name(&pat.ident.to_string())?;
    let init = local.init.as_ref()?;
    match &*init.expr {
        Expr::Macro(m) if DslMacro::from_path(&m.mac.path) == Some(DslMacro::Signal) && m.mac.tokens.is_empty() => {
            Some((pat.ident.clone(), collective))
        }
        _ => None,
    }
}

/// Walks a host body: checks every DSL macro site (a mistake becomes its error in place) and
/// gives each collective without a signal a hoisted one.
struct CheckAndHoist<'a> {
    names: &'a mut AutoNames,
    /// Bindings whose `window!`/`signal!` was wrong: the DSL macros that use them are dropped
    /// (they only touch the binding), so one mistake gives one error, not one per use.
    poisoned: Vec<Ident>,
    /// Inside a closure without a declared return type: a DSL macro's `?` would return from the
    /// closure, not from the host function.
    in_closure: bool,
    errors: &'a mut Errors,
    hoisted: Vec<Hoisted>,
    kernels: &'a Kernels,
}

/// What becomes of one DSL macro invocation.
enum Site {
    /// It is canonical as written.
    Keep,
    /// Its arguments become these (a hoisted signal was added).
    Retoken(TokenStream),
    /// It is wrong: this error replaces it.
    Error(TokenStream),
}

impl CheckAndHoist<'_> {
    fn site(&mut self, mac: &Macro, kind: DslMacro, bound: bool) -> Site {
        if self.in_closure {
            let error = syn::Error::new_spanned(
                &mac.path,
                format!(
                    "`{0}!` cannot be used inside this closure: it passes its error on with `?`, which would \
                     return from the closure, not from the host function; call `{0}!` in the host function's \
                     own body (a `for` loop instead of `.for_each(|..| ..)`), or give the closure a return \
                     type of `pld::Result<_>`",
                    kind.name()
                ),
            );
            let compile_error = error.to_compile_error();
            self.errors.push(error);
            return Site::Error(quote! { { #compile_error } });
        }
        let uses = self.poisoned_uses(mac.tokens.clone());
        if !uses.is_empty() {
            return Site::Error(quote! { { #(let _ = &#uses;)* } });
        }
        let result = match kind {
            DslMacro::Collective(collective) => {
                parse_call(collective, mac.tokens.clone(), close_span(mac)).map(|call| self.canonical(call))
            }
            DslMacro::Window | DslMacro::Signal if !bound => Err(syn::Error::new_spanned(
                &mac.path,
                format!("bind a {0} with `let name = {0}!(...)`: the binding names it in messages", kind.name()),
            )),
            DslMacro::Window => alloc::check_window(mac).map(|()| Site::Keep),
            DslMacro::Signal => alloc::check_signal(mac).map(|()| Site::Keep),
            DslMacro::StageIn | DslMacro::StageOut => alloc::check_stage(kind, mac).map(|()| Site::Keep),
            DslMacro::Launch => parse_launch(mac.tokens.clone(), close_span(mac), self.kernels).map(|_| Site::Keep),
        };
        result.unwrap_or_else(|error| {
            let compile_error = error.to_compile_error();
            self.errors.push(error);
            Site::Error(quote! { { #compile_error } })
        })
    }

    /// The poisoned bindings `tokens` name.
    fn poisoned_uses(&self, tokens: TokenStream) -> Vec<Ident> {
        let mut uses = Vec::new();
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Ident(ident) if self.poisoned.contains(&ident) && !uses.contains(&ident) => {
                    uses.push(ident);
                }
                proc_macro2::TokenTree::Group(group) => {
                    for ident in self.poisoned_uses(group.stream()) {
                        if !uses.contains(&ident) {
                            uses.push(ident);
                        }
                    }
                }
                _ => {}
            }
        }
        uses
    }

    /// Gives a call site without a signal its hoisted one.
    fn canonical(&mut self, mut call: CollectiveCall) -> Site {
        // Sends and receives have no signal: the runtime's point-to-point area carries them.
        if call.signal.is_some() || call.collective.is_point_to_point() {
            return Site::Keep;
        }
        let name = self.names.next(call.collective);
        call.signal = Some(syn::parse_quote!(#name));
        self.hoisted.push(Hoisted { name, collective: call.collective });
        Site::Retoken(call.canonical_tokens())
    }
}

fn dsl_macro(mac: &Macro) -> Option<DslMacro> {
    DslMacro::from_path(&mac.path)
}

impl VisitMut for CheckAndHoist<'_> {
    fn visit_item_mut(&mut self, _: &mut syn::Item) {
        // Nested items are not host code.
    }

    fn visit_arm_mut(&mut self, arm: &mut syn::Arm) {
        visit_mut::visit_arm_mut(self, arm);
        // A macro as a match arm's body prints inside braces; give it those braces now, so the
        // canonical form is what printing and parsing again produce.
        if let Expr::Macro(_) = &*arm.body {
            let body = std::mem::replace(&mut *arm.body, Expr::Verbatim(TokenStream::new()));
            *arm.body = syn::parse_quote!({ #body });
        }
        if let Expr::Block(_) = &*arm.body {
            arm.comma = None; // as printed
        }
    }

    fn visit_local_mut(&mut self, local: &mut Local) {
        let simple = matches!(&local.pat, Pat::Ident(_))
            || matches!(&local.pat, Pat::Type(t) if matches!(&*t.pat, Pat::Ident(_)));
        if let Some(init) = &mut local.init
            && let Expr::Macro(ExprMacro { mac, .. }) = &mut *init.expr
            && let Some(kind @ (DslMacro::Window | DslMacro::Signal)) = dsl_macro(mac)
        {
            match self.site(&mac.clone(), kind, simple) {
                Site::Keep => {}
                Site::Retoken(tokens) => mac.tokens = tokens,
                Site::Error(error) => {
                    *init.expr = Expr::Verbatim(error);
                    let name = match &local.pat {
                        Pat::Ident(p) => Some(&p.ident),
                        Pat::Type(t) => match &*t.pat {
                            Pat::Ident(p) => Some(&p.ident),
                            _ => None,
                        },
                        _ => None,
                    };
                    self.poisoned.extend(name.cloned());
                }
            }
            return;
        }
        visit_mut::visit_local_mut(self, local);
    }

    fn visit_stmt_mut(&mut self, stmt: &mut Stmt) {
        if let Stmt::Macro(m) = stmt
            && let Some(kind) = dsl_macro(&m.mac)
        {
            match self.site(&m.mac.clone(), kind, false) {
                Site::Keep => {}
                Site::Retoken(tokens) => m.mac.tokens = tokens,
                Site::Error(error) => *stmt = Stmt::Expr(Expr::Verbatim(error), Some(m.semi_token.unwrap_or_default())),
            }
            return;
        }
        visit_mut::visit_stmt_mut(self, stmt);
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        if let Expr::Closure(closure) = expr {
            let outer = self.in_closure;
            self.in_closure = matches!(closure.output, syn::ReturnType::Default);
            visit_mut::visit_expr_closure_mut(self, closure);
            self.in_closure = outer;
            return;
        }
        if let Expr::Call(call) = expr
            && let Expr::Path(p) = &*call.func
            && let Some(name) = p.path.get_ident()
            && self.kernels.iter().any(|(k, _)| name == k)
        {
            let error = syn::Error::new_spanned(
                &*call,
                format!("kernel `{name}` runs on a rank: launch it with `launch!({name}(..), device = r)`"),
            );
            let compile_error = error.to_compile_error();
            self.errors.push(error);
            *expr = Expr::Verbatim(quote! { { #compile_error } });
            return;
        }
        if let Expr::Macro(m) = expr
            && let Some(kind) = dsl_macro(&m.mac)
        {
            match self.site(&m.mac.clone(), kind, false) {
                Site::Keep => {}
                Site::Retoken(tokens) => m.mac.tokens = tokens,
                Site::Error(error) => *expr = Expr::Verbatim(error),
            }
            return;
        }
        visit_mut::visit_expr_mut(self, expr);
    }
}

impl ToTokens for Hoisted {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let name = &self.name;
        tokens.extend(quote! { let #name = signal!(); });
    }
}
