//! Generating Rust from a canonical [`Program`]: host functions become functions of a
//! `pld::Host`, DSL macros become calls of the runtime API, and a `Program` type with a `load`
//! function is added to the module.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, ExprMacro, FnArg, Ident, Local, Macro, Pat, ReturnType, Stmt};

use pld_model::{AllReduceMode, Collective, ReduceOp};

use crate::alloc::{WindowArgs, stage_args};
use crate::call::{CollectiveCall, NRanks, parse_call};
use crate::dsl::DslMacro;
use crate::host::{HostFn, close_span};
use crate::program::{Program, ProgramItem};

/// The host scope every host function receives.
fn host_ident() -> Ident {
    Ident::new("__pld_host", Span::call_site())
}

/// The whole module.
pub fn expand_program(program: &Program) -> TokenStream {
    let Program { attrs, vis, ident, items } = program;
    let items = items.iter().map(|item| match item {
        ProgramItem::Host(host) => expand_host_fn(host),
        ProgramItem::Item(item) => quote!(#item),
    });
    let program_type = program_type(program);
    quote! {
        #(#attrs)*
        #vis mod #ident {
            #(#items)*
            #program_type
        }
    }
}

fn return_type(host: &HostFn) -> TokenStream {
    match &host.sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => quote!(#ty),
    }
}

/// `fn f(args) -> R { body }` becomes `fn f(__pld_host: &pld::Host<'_>, args) -> pld::Result<R>`
/// with the hoisted signals allocated first.
fn expand_host_fn(host: &HostFn) -> TokenStream {
    let HostFn { attrs, vis, sig, hoisted, body } = host;
    let h = host_ident();
    let (name, generics, inputs, where_clause) = (&sig.ident, &sig.generics, &sig.inputs, &sig.generics.where_clause);
    let ret = return_type(host);
    let hoisted = hoisted.iter().map(|s| {
        let (binding, label) = (&s.name, s.name.to_string());
        quote!(let #binding = #h.signal(#label)?;)
    });
    let mut body = body.clone();
    Expand { returns_rewritten: true }.visit_block_mut(&mut body);
    let comma = if inputs.is_empty() { quote!() } else { quote!(,) };
    quote! {
        #(#attrs)*
        #[allow(clippy::unit_arg, unreachable_code, clippy::needless_return)]
        #vis fn #name #generics (#h: &::pld::Host<'_> #comma #inputs) -> ::pld::Result<#ret> #where_clause {
            #(#hoisted)*
            // Host-code builtins, as closures so they also resolve inside other macros' tokens.
            #[allow(unused_variables)]
            let ranks = || #h.ranks();
            #[allow(unused_variables)]
            let world_size = || #h.nranks();
            ::core::result::Result::Ok(#body)
        }
    }
}

/// `struct Program`, `fn load`, and one method per host function.
fn program_type(program: &Program) -> TokenStream {
    let name = program.ident.to_string();
    let program_doc = format!(" The `{name}` program on a world: one method per host function. Made by [`load`].");
    let load_doc = format!(" Loads the `{name}` program onto `world`.");
    let methods = program.hosts().map(|host| {
        let HostFn { attrs, vis, sig, .. } = host;
        let docs = attrs.iter().filter(|a| a.path().is_ident("doc"));
        let (fn_name, generics, where_clause) = (&sig.ident, &sig.generics, &sig.generics.where_clause);
        let ret = return_type(host);
        let (params, args): (Vec<_>, Vec<_>) = sig
            .inputs
            .iter()
            .enumerate()
            .filter_map(|(i, arg)| match arg {
                FnArg::Typed(typed) => {
                    let arg = format_ident!("__pld_arg{i}");
                    let ty = &typed.ty;
                    Some((quote!(#arg: #ty), arg))
                }
                FnArg::Receiver(_) => None,
            })
            .unzip();
        quote! {
            #(#docs)*
            ///
            /// Runs the host function on the program's world in a host scope of its own, and
            /// returns once every rank finished, or with the first error of any rank.
            #vis fn #fn_name #generics (&self, #(#params),*) -> ::pld::Result<#ret> #where_clause {
                let __pld_host = self.world.host()?;
                let __pld_result = #fn_name(&__pld_host, #(#args),*);
                let __pld_synced = __pld_host.finish();
                let __pld_value = __pld_result?;
                __pld_synced?;
                ::core::result::Result::Ok(__pld_value)
            }
        }
    });
    quote! {
        #[doc = #program_doc]
        #[derive(Clone, Copy, Debug)]
        pub struct Program<'w> {
            world: &'w ::pld::World,
        }

        #[doc = #load_doc]
        pub fn load(world: &::pld::World) -> ::pld::Result<Program<'_>> {
            ::core::result::Result::Ok(Program { world })
        }

        impl<'w> Program<'w> {
            /// The world the program runs on.
            pub fn world(&self) -> &'w ::pld::World {
                self.world
            }

            #(#methods)*
        }
    }
}

/// Rewrites a canonical body: DSL macros become runtime calls and `return e` returns `Ok(e)`.
struct Expand {
    /// False inside closures, whose `return` is their own.
    returns_rewritten: bool,
}

impl VisitMut for Expand {
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}

    fn visit_local_mut(&mut self, local: &mut Local) {
        let name = match &local.pat {
            Pat::Ident(p) => Some(p.ident.clone()),
            Pat::Type(t) => match &*t.pat {
                Pat::Ident(p) => Some(p.ident.clone()),
                _ => None,
            },
            _ => None,
        };
        if let (Some(name), Some(init)) = (name, &mut local.init)
            && let Expr::Macro(ExprMacro { mac, .. }) = &*init.expr
            && let Some(kind @ (DslMacro::Window | DslMacro::Signal)) = DslMacro::from_path(&mac.path)
        {
            *init.expr = Expr::Verbatim(expand_alloc(kind, mac, &name));
            return;
        }
        visit_mut::visit_local_mut(self, local);
    }

    fn visit_stmt_mut(&mut self, stmt: &mut Stmt) {
        if let Stmt::Macro(m) = stmt
            && let Some(kind) = DslMacro::from_path(&m.mac.path)
        {
            let expr = Expr::Verbatim(expand_site(kind, &m.mac));
            *stmt = Stmt::Expr(expr, Some(m.semi_token.unwrap_or_default()));
            return;
        }
        visit_mut::visit_stmt_mut(self, stmt);
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Macro(m) => {
                if let Some(kind) = DslMacro::from_path(&m.mac.path) {
                    *expr = Expr::Verbatim(expand_site(kind, &m.mac));
                    return;
                }
            }
            Expr::Closure(_) => {
                let outer = std::mem::replace(&mut self.returns_rewritten, false);
                visit_mut::visit_expr_mut(self, expr);
                self.returns_rewritten = outer;
                return;
            }
            Expr::Return(ret) if self.returns_rewritten => {
                if let Some(value) = &mut ret.expr {
                    self.visit_expr_mut(value);
                }
                let value = ret.expr.as_ref().map_or_else(|| quote!(()), |v| quote!(#v));
                *expr = Expr::Verbatim(quote!(return ::core::result::Result::Ok(#value)));
                return;
            }
            _ => {}
        }
        visit_mut::visit_expr_mut(self, expr);
    }
}

/// `let name = window!(T, shape)` / `let name = signal!()`.
fn expand_alloc(kind: DslMacro, mac: &Macro, name: &Ident) -> TokenStream {
    let h = host_ident();
    let label = name.to_string();
    match kind {
        DslMacro::Window => match mac.parse_body::<WindowArgs>() {
            Ok(WindowArgs { elem, mut shape }) => {
                inner(&mut shape);
                quote_spanned!(mac.path.span()=> #h.window::<#elem>(#label, #shape)?)
            }
            Err(e) => e.to_compile_error(),
        },
        _ => quote_spanned!(mac.path.span()=> #h.signal(#label)?),
    }
}

/// One DSL macro outside a `let`: a collective or a staging copy.
fn expand_site(kind: DslMacro, mac: &Macro) -> TokenStream {
    let h = host_ident();
    let result = match kind {
        DslMacro::Collective(c) => parse_call(c, mac.tokens.clone(), close_span(mac)).map(|mut call| {
            call.windows.iter_mut().chain(&mut call.root).chain(&mut call.signal).for_each(inner);
            expand_call(&call)
        }),
        DslMacro::StageIn => stage_args(mac).map(|[mut w, mut r, mut data]| {
            [&mut w, &mut r, &mut data].into_iter().for_each(inner);
            let w = window(&w);
            quote_spanned!(mac.path.span()=> #h.write(#w, #r, ::pld::dsl::host_data(&#data))?)
        }),
        DslMacro::StageOut => stage_args(mac).map(|[mut w, mut r, mut data]| {
            [&mut w, &mut r, &mut data].into_iter().for_each(inner);
            let w = window(&w);
            quote_spanned!(mac.path.span()=> #h.read_into(#w, #r, ::pld::dsl::host_data_mut(&mut #data))?)
        }),
        DslMacro::Window | DslMacro::Signal => {
            Err(syn::Error::new_spanned(&mac.path, format!("bind a {0} with `let name = {0}!(...)`", kind.name())))
        }
    };
    result.unwrap_or_else(|e| {
        let e = e.to_compile_error();
        quote!({ #e })
    })
}

/// Expands host-code forms (`world_size()`, nested DSL macros) inside a macro's arguments.
fn inner(expr: &mut Expr) {
    Expand { returns_rewritten: false }.visit_expr_mut(expr);
}

/// `&w` checked to be a window, at the operand's span (`pld::dsl::AsWindow`).
fn window(expr: &Expr) -> TokenStream {
    quote_spanned!(expr.span()=> ::pld::dsl::window(&#expr))
}

fn variant(name: &str) -> Ident {
    let mut chars = name.chars();
    let upper: String = chars.next().into_iter().flat_map(char::to_uppercase).chain(chars).collect();
    Ident::new(&upper, Span::call_site())
}

/// The runtime call of a canonical collective call site.
pub(crate) fn expand_call(call: &CollectiveCall) -> TokenStream {
    let h = host_ident();
    let windows: Vec<TokenStream> = call.windows.iter().map(window).collect();
    let mut options = TokenStream::new();
    if let Some(n) = &call.nranks {
        options.extend(match n {
            NRanks::Literal(n) => {
                let n = proc_macro2::Literal::u64_unsuffixed(*n);
                quote!(.nranks(#n))
            }
            NRanks::Const(path) => quote_spanned! {path.span()=>
                .nranks({
                    const { ::core::assert!(#path > 0, "nranks must be a positive rank count") };
                    #path as usize
                })
            },
        });
    }
    if let Some(signal) = &call.signal {
        options.extend(quote_spanned!(signal.span()=> .signal(::pld::dsl::signal(&#signal))));
    }
    let op = variant(call.op.unwrap_or(ReduceOp::Sum).name());
    match call.collective {
        Collective::AllReduce => {
            let mode = variant(call.mode.unwrap_or(AllReduceMode::Mesh).name());
            let t = &windows[0];
            quote!(#h.all_reduce(#t, ::pld::AllReduce::mesh().mode(::pld::AllReduceMode::#mode).op(::pld::ReduceOp::#op)#options)?)
        }
        Collective::ReduceScatter => {
            let t = &windows[0];
            quote!(#h.reduce_scatter(#t, ::pld::ReduceScatter::new().op(::pld::ReduceOp::#op)#options)?)
        }
        Collective::Broadcast => {
            let t = &windows[0];
            let root = call.root.as_ref().map_or_else(|| quote!(0), |r| quote!(#r));
            quote!(#h.broadcast(#t, ::pld::Broadcast::root((#root) as i64)#options)?)
        }
        Collective::AllGather => {
            let (local, target) = (&windows[0], &windows[1]);
            quote!(#h.all_gather(#local, #target, ::pld::Opts::new()#options)?)
        }
        Collective::AllToAll => {
            let (input, target) = (&windows[0], &windows[1]);
            quote!(#h.all_to_all(#input, #target, ::pld::Opts::new()#options)?)
        }
        Collective::AllToAllV => {
            let (input, target) = (&windows[0], &windows[1]);
            let counts: Vec<TokenStream> =
                call.windows[2..].iter().map(|e| quote_spanned!(e.span()=> ::pld::dsl::counts(&#e))).collect();
            let (send, recv) = (&counts[0], &counts[1]);
            quote!(#h.all_to_all_v(#input, #target, #send, #recv, ::pld::Opts::new()#options)?)
        }
        Collective::Barrier => quote!(#h.barrier(::pld::Opts::new()#options)?),
    }
}
