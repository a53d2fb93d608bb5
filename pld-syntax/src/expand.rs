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
use crate::dsl::close_span;
use crate::host::HostFn;
use crate::kernel::{Param, ParamKind};
use crate::launch::{Kernels, LaunchCall, parse_launch};
use crate::paths;
use crate::program::{Program, ProgramItem};

/// The host scope every host function receives.
fn host_ident() -> Ident {
    Ident::new("__pld_host", Span::call_site())
}

/// The whole module. `complete` says the program had no errors: only then is the device
/// binary embedded (a program with errors would otherwise also report a missing build script).
pub fn expand_program(program: &Program, complete: bool) -> TokenStream {
    let Program { attrs, vis, ident, items } = program;
    let kernels: Vec<(String, Option<Vec<Param>>)> = program.kernels().map(|k| (k.name(), k.params.clone())).collect();
    let items = items.iter().map(|item| match item {
        ProgramItem::Host(host) => expand_host_fn(host, &kernels),
        ProgramItem::Kernel(_) => quote!(),
        ProgramItem::Item(item) => quote!(#item),
    });
    let program_type = program_type(program);
    let device = device_binary(program, complete);
    quote! {
        #(#attrs)*
        #vis mod #ident {
            #(#items)*
            #program_type
            #device
        }
    }
}

/// The Rust type of a kernel parameter at launch.
fn launch_param_type(kind: &ParamKind) -> TokenStream {
    let elem = paths::elem;
    match kind {
        ParamKind::Tensor { dtype, mutable: false } => {
            let t = elem(*dtype);
            quote!(&[#t])
        }
        ParamKind::Tensor { dtype, mutable: true } => {
            let t = elem(*dtype);
            quote!(&mut [#t])
        }
        ParamKind::Window { dtype, .. } => {
            let t = elem(*dtype);
            let window = paths::window(t);
            quote!(&#window)
        }
        ParamKind::Int(name) | ParamKind::Float(name) => {
            let ident = Ident::new(name, Span::call_site());
            quote!(#ident)
        }
    }
}

/// The device binary of a program with kernels, and one typed launcher per kernel.
fn device_binary(program: &Program, complete: bool) -> TokenStream {
    if program.kernels().next().is_none() {
        return quote!();
    }
    let module = program.ident.to_string();
    let hash = program.kernels_hash();
    let image = if complete {
        quote!(::core::result::Result::Ok(::core::include_bytes!(::core::env!(
            "PLD_DEVICE_BINARY",
            "this pld program has kernels, which are compiled by a build script: add `pld-backend` to \
             [build-dependencies] and a build.rs with `fn main() { pld_backend::Build::new().file(\"src/main.rs\").compile(); }` \
             naming the file that holds the program"
        ))))
    } else {
        let error = paths::error();
        quote!(::core::result::Result::Err(#error::DeviceBinary {
            binary: #module.into(),
            reason: "the program did not compile".into(),
        }))
    };
    let (host_t, dsl, unit_result) = (paths::host(), paths::dsl(), paths::result(quote!(())));
    let binary_ref = paths::result(quote!(&'static #dsl::ProgramBinary));
    let binary = paths::result(quote!(#dsl::ProgramBinary));
    let image_t = paths::result(quote!(&'static [u8]));
    let launchers = program.kernels().filter_map(|k| {
        let params = k.params.as_ref()?;
        let name = &k.func.sig.ident;
        let symbol = format!("pld_kernel_{module}__{name}");
        let param_names = params.iter().map(|p| p.name.as_str());
        let (decls, pushes): (Vec<_>, Vec<_>) = params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let arg = format_ident!("arg{i}");
                let ty = launch_param_type(&p.kind);
                let push = match p.kind {
                    ParamKind::Tensor { mutable: false, .. } => quote!(args.tensor(#arg);),
                    ParamKind::Tensor { mutable: true, .. } => quote!(args.tensor_mut(#arg);),
                    ParamKind::Window { .. } => quote!(args.window(#arg);),
                    ParamKind::Int(_) => quote!(args.int(#arg as i64);),
                    ParamKind::Float(_) => quote!(args.float(#arg as f64);),
                };
                (quote!(#arg: #ty), push)
            })
            .unzip();
        Some(quote! {
            #[allow(clippy::unnecessary_cast, clippy::too_many_arguments)]
            #[track_caller]
            pub fn #name(host: &#host_t, device: usize, #(#decls),*) -> #unit_result {
                let kernel = super::__pld_device()?.kernel(#symbol)?.with_source(::core::file!(), &[#(#param_names),*]);
                let mut args = #dsl::KernelArgs::new();
                #(#pushes)*
                // SAFETY: the kernel was generated by pld-backend from this very signature, and
                // the binary's hash of this program's kernels was checked when it was loaded.
                unsafe { host.launch_args(&kernel, device, args) }
            }
        })
    });
    quote! {
        /// The program's device binary, loaded once and checked against this program's kernels.
        fn __pld_device() -> #binary_ref {
            static DEVICE: ::std::sync::OnceLock<#binary> = ::std::sync::OnceLock::new();
            DEVICE
                .get_or_init(|| {
                    let image: #image_t = #image;
                    #dsl::ProgramBinary::load(#module, image?, #hash)
                })
                .as_ref()
                .map_err(::core::clone::Clone::clone)
        }

        /// Typed launchers, one per kernel: rustc checks `launch!` arguments against them.
        #[doc(hidden)]
        pub mod __pld_launch {
            #(#launchers)*
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
fn expand_host_fn(host: &HostFn, kernels: &Kernels) -> TokenStream {
    let HostFn { attrs, vis, sig, hoisted, body } = host;
    let h = host_ident();
    let (name, generics, inputs, where_clause) = (&sig.ident, &sig.generics, &sig.inputs, &sig.generics.where_clause);
    let ret = return_type(host);
    let hoisted = hoisted.iter().map(|s| {
        let (binding, label) = (&s.name, s.name.to_string());
        quote!(let #binding = #h.signal(#label)?;)
    });
    let mut body = body.clone();
    let literal_groups = std::cell::Cell::new(0);
    let tensors = std::cell::RefCell::new(tensor_params(sig));
    Expand { returns_rewritten: true, kernels, literal_groups: &literal_groups, tensors: &tensors }
        .visit_block_mut(&mut body);
    let group_cells = (0..literal_groups.get()).map(|i| {
        let cell = format_ident!("__pld_group_{i}");
        quote!(let #cell = ::core::cell::OnceCell::new();)
    });
    let comma = if inputs.is_empty() { quote!() } else { quote!(,) };
    let (host_t, result) = (paths::host(), paths::result(ret));
    quote! {
        #(#attrs)*
        #[allow(clippy::unit_arg, unreachable_code, clippy::needless_return)]
        #vis fn #name #generics (#h: &#host_t #comma #inputs) -> #result #where_clause {
            #(#hoisted)*
            #(#group_cells)*
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
    let (world, load_result) = (paths::world(), paths::result(quote!(Program<'_>)));
    let methods = program.hosts().map(|host| {
        let HostFn { attrs, vis, sig, .. } = host;
        let docs = attrs.iter().filter(|a| a.path().is_ident("doc"));
        let (fn_name, generics, where_clause) = (&sig.ident, &sig.generics, &sig.generics.where_clause);
        let result = paths::result(return_type(host));
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
            #vis fn #fn_name #generics (&self, #(#params),*) -> #result #where_clause {
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
            world: &'w #world,
        }

        #[doc = #load_doc]
        pub fn load(world: &#world) -> #load_result {
            ::core::result::Result::Ok(Program { world })
        }

        impl<'w> Program<'w> {
            /// The world the program runs on.
            pub fn world(&self) -> &'w #world {
                self.world
            }

            #(#methods)*
        }
    }
}

/// Rewrites a canonical body: DSL macros become runtime calls and `return e` returns `Ok(e)`.
struct Expand<'a> {
    /// False inside closures, whose `return` is their own.
    returns_rewritten: bool,
    /// The program's kernels, for `launch!`.
    kernels: &'a Kernels,
    /// Literal groups (`group = [0, 2, 5]`) so far: each call site's group is made once, at
    /// its first call, in a cell declared at the start of the function.
    literal_groups: &'a std::cell::Cell<usize>,
    /// The bindings that hold plain host tensors (parameters and `let`s of type
    /// `pld::Tensor`): a collective given one stages it through a window of its own.
    tensors: &'a std::cell::RefCell<Vec<(Ident, TensorBinding)>>,
}

/// How a binding holds a host tensor.
#[derive(Clone, Copy)]
struct TensorBinding {
    /// A reference (`&Tensor`, `&mut Tensor`): reborrowed with `*`.
    by_ref: bool,
    /// Writable (`&mut Tensor`, `let mut t`): a collective may write its result back.
    mutable: bool,
}

/// `Tensor<..>`, `pld::Tensor<..>`: a path whose last segment is `Tensor`.
fn is_tensor_path(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Tensor"))
}

/// A binding of type `ty` (declared `mut` or not) as a tensor binding, if it is one.
fn tensor_type(ty: &syn::Type, mutable: bool) -> Option<TensorBinding> {
    match ty {
        syn::Type::Reference(r) if is_tensor_path(&r.elem) => {
            Some(TensorBinding { by_ref: true, mutable: r.mutability.is_some() })
        }
        ty if is_tensor_path(ty) => Some(TensorBinding { by_ref: false, mutable }),
        _ => None,
    }
}

/// The host function's parameters that are tensors.
fn tensor_params(sig: &syn::Signature) -> Vec<(Ident, TensorBinding)> {
    sig.inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) => tensor_type(&t.ty, p.mutability.is_some()).map(|b| (p.ident.clone(), b)),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect()
}

/// What a `let` binds, when it binds one name: the name and, if it is a tensor, how (a type
/// annotation naming `Tensor`, or an initializer `Tensor::zeros(..)` / `pld::Tensor::from_fn(..)`).
fn let_binding(local: &Local) -> Option<(Ident, Option<TensorBinding>)> {
    match &local.pat {
        Pat::Ident(p) => {
            let init_is_tensor = local.init.as_ref().is_some_and(|init| match &*init.expr {
                Expr::Call(call) => matches!(&*call.func, Expr::Path(f) if {
                    let segs: Vec<_> = f.path.segments.iter().collect();
                    segs.len() >= 2 && segs[segs.len() - 2].ident == "Tensor"
                }),
                _ => false,
            });
            let binding = init_is_tensor.then_some(TensorBinding { by_ref: false, mutable: p.mutability.is_some() });
            Some((p.ident.clone(), binding))
        }
        Pat::Type(t) => match &*t.pat {
            Pat::Ident(p) => Some((p.ident.clone(), tensor_type(&t.ty, p.mutability.is_some()))),
            _ => None,
        },
        _ => None,
    }
}

impl VisitMut for Expand<'_> {
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}

    fn visit_local_mut(&mut self, local: &mut Local) {
        // A later `let` of the same name shadows a tensor (or makes one).
        if let Some((name, tensor)) = let_binding(local) {
            let mut tensors = self.tensors.borrow_mut();
            tensors.retain(|(n, _)| *n != name);
            if let Some(binding) = tensor {
                tensors.push((name, binding));
            }
        }
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
            *init.expr = Expr::Verbatim(self.expand_alloc(kind, mac, &name));
            return;
        }
        visit_mut::visit_local_mut(self, local);
    }

    fn visit_stmt_mut(&mut self, stmt: &mut Stmt) {
        if let Stmt::Macro(m) = stmt
            && let Some(kind) = DslMacro::from_path(&m.mac.path)
        {
            let expr = Expr::Verbatim(self.expand_site(kind, &m.mac));
            *stmt = Stmt::Expr(expr, Some(m.semi_token.unwrap_or_default()));
            return;
        }
        visit_mut::visit_stmt_mut(self, stmt);
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Macro(m) => {
                if let Some(kind) = DslMacro::from_path(&m.mac.path) {
                    *expr = Expr::Verbatim(self.expand_site(kind, &m.mac));
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

impl Expand<'_> {
    /// `let name = window!(T, shape)` / `let name = signal!()`.
    fn expand_alloc(&self, kind: DslMacro, mac: &Macro, name: &Ident) -> TokenStream {
        let h = host_ident();
        let label = name.to_string();
        match kind {
            DslMacro::Window => match mac.parse_body::<WindowArgs>() {
                Ok(WindowArgs { elem, mut shape }) => {
                    self.inner(&mut shape);
                    quote_spanned!(mac.path.span()=> #h.window::<#elem>(#label, #shape)?)
                }
                Err(e) => e.to_compile_error(),
            },
            _ => quote_spanned!(mac.path.span()=> #h.signal(#label)?),
        }
    }

    /// One DSL macro outside a `let`: a collective or a staging copy.
    fn expand_site(&self, kind: DslMacro, mac: &Macro) -> TokenStream {
        let (h, dsl) = (host_ident(), paths::at(mac.path.span(), paths::dsl()));
        let result = match kind {
            DslMacro::Collective(c) => parse_call(c, mac.tokens.clone(), close_span(mac)).map(|mut call| {
                call.windows
                    .iter_mut()
                    .chain(&mut call.root)
                    .chain(&mut call.group)
                    .chain(&mut call.signal)
                    .chain(&mut call.to)
                    .chain(&mut call.from)
                    .for_each(|e| self.inner(e));
                let group = call.group.as_ref().map(|g| self.group_option(g));
                let (before, after) = self.stage_tensors(&mut call);
                let expanded = expand_call(&call, mac.path.span(), group);
                if before.is_empty() { expanded } else { quote!({ #(#before)* #expanded; #(#after)* }) }
            }),
            DslMacro::StageIn => stage_args(mac).map(|[mut w, mut r, mut data]| {
                [&mut w, &mut r, &mut data].into_iter().for_each(|e| self.inner(e));
                let w = window(&w);
                quote_spanned!(mac.path.span()=> #h.write(#w, #r, #dsl::host_data(&#data))?)
            }),
            DslMacro::StageOut => stage_args(mac).map(|[mut w, mut r, mut data]| {
                [&mut w, &mut r, &mut data].into_iter().for_each(|e| self.inner(e));
                let w = window(&w);
                quote_spanned!(mac.path.span()=> #h.read_into(#w, #r, #dsl::host_data_mut(&mut #data))?)
            }),
            DslMacro::Launch => parse_launch(mac.tokens.clone(), close_span(mac), self.kernels).map(|mut launch| {
                launch.args.iter_mut().chain([&mut launch.device]).for_each(|e| self.inner(e));
                self.expand_launch(&launch)
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

    /// `.group(..)` of a call: a literal list is made a group once per call site, at its first
    /// call (making a group is collective over the world, and allocates its areas).
    fn group_option(&self, group: &Expr) -> TokenStream {
        let h = host_ident();
        if let Expr::Array(ranks) = group {
            let i = self.literal_groups.get();
            self.literal_groups.set(i + 1);
            let cell = format_ident!("__pld_group_{i}");
            quote_spanned! {group.span()=>
                .group({
                    if #cell.get().is_none() {
                        let _ = #cell.set(#h.group(&#ranks)?);
                    }
                    #cell.get().expect("made just above")
                })
            }
        } else {
            quote_spanned!(group.span()=> .group(&(#group)))
        }
    }

    /// Operands that name plain host tensors: each is staged into a window of its own before
    /// the call (`before`) and, where the collective writes that operand, copied back after it
    /// (`after`); the call then takes the window. Returns the statements around the call.
    fn stage_tensors(&self, call: &mut CollectiveCall) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let (h, tensors) = (host_ident(), self.tensors.borrow());
        let (mut before, mut after) = (Vec::new(), Vec::new());
        let roles = call.collective.contract().windows;
        for (i, (operand, role)) in call.windows.iter_mut().zip(roles).enumerate() {
            let Expr::Path(path) = &*operand else { continue };
            let Some(ident) = path.path.get_ident() else { continue };
            let Some((_, binding)) = tensors.iter().find(|(n, _)| n == ident) else { continue };
            let writes = role.is_written();
            let dsl = paths::at(ident.span(), paths::dsl());
            let staged = format_ident!("__pld_staged_{i}", span = ident.span());
            let name = ident.to_string();
            let shared = if binding.by_ref { quote!(&*#ident) } else { quote!(&#ident) };
            before.push(quote_spanned!(ident.span()=> let #staged = #dsl::stage_tensor(#h, #name, #shared)?;));
            if writes && call.collective == Collective::Recv {
                // Copying the message back at once would wait for it there, ending the batch
                // its sends and receives progress in together.
                let message = format!(
                    "recv! into the host tensor `{name}` would wait for the message at once and break the batching of \
                     sends and receives; receive into a window (`let w = window!(..)`) and `stage_out!` it after"
                );
                after.push(syn::Error::new(ident.span(), message).to_compile_error());
            } else if writes {
                if binding.mutable {
                    let unique = if binding.by_ref { quote!(&mut *#ident) } else { quote!(&mut #ident) };
                    after.push(quote_spanned!(ident.span()=> #dsl::unstage(#h, &#staged, #unique)?;));
                } else {
                    let how = if binding.by_ref { "take it as `&mut pld::Tensor`" } else { "declare it `let mut`" };
                    let message = format!(
                        "`{name}` is a host tensor that {} writes its {} into, but it is not mutable: {how}",
                        call.collective.name(),
                        role.name()
                    );
                    after.push(syn::Error::new(ident.span(), message).to_compile_error());
                }
            }
            *operand = syn::parse_quote_spanned!(ident.span()=> #staged);
        }
        (before, after)
    }

    /// Expands host-code forms (`world_size()`, nested DSL macros) inside a macro's arguments.
    fn inner(&self, expr: &mut Expr) {
        Expand {
            returns_rewritten: false,
            kernels: self.kernels,
            literal_groups: self.literal_groups,
            tensors: self.tensors,
        }
        .visit_expr_mut(expr);
    }

    /// `launch!(k(args..), device = r)`: the typed launcher, arguments adapted per parameter.
    fn expand_launch(&self, launch: &LaunchCall) -> TokenStream {
        let (h, dsl) = (host_ident(), paths::dsl());
        let LaunchCall { kernel, args, device } = launch;
        let params = self.kernels.iter().find(|(n, _)| kernel == n).and_then(|(_, p)| p.as_ref());
        let args = args.iter().enumerate().map(|(i, arg)| match params.map(|p| &p[i].kind) {
            Some(ParamKind::Tensor { mutable: false, .. }) => {
                let dsl = paths::at(arg.span(), dsl.clone());
                quote_spanned!(arg.span()=> #dsl::host_data(&#arg))
            }
            Some(ParamKind::Tensor { mutable: true, .. }) => {
                let dsl = paths::at(arg.span(), dsl.clone());
                quote_spanned!(arg.span()=> #dsl::host_data_mut(&mut #arg))
            }
            Some(ParamKind::Window { .. }) => window(arg),
            _ => quote!(#arg),
        });
        quote_spanned!(kernel.span()=> __pld_launch::#kernel(#h, #device, #(#args),*)?)
    }
}

/// The root as the runtime's `i64`, checked to be an integer at the operand's span
/// (`pld::dsl::AsRoot`); the contract makes `root` required, so the parser saw one.
fn root_operand(call: &CollectiveCall) -> TokenStream {
    let root = call.root.as_ref().expect("`root` is required by the contract");
    let dsl = paths::at(root.span(), paths::dsl());
    quote_spanned!(root.span()=> #dsl::root(#root))
}

/// `&w` checked to be a window, at the operand's span (`pld::dsl::AsWindow`).
fn window(expr: &Expr) -> TokenStream {
    let dsl = paths::at(expr.span(), paths::dsl());
    quote_spanned!(expr.span()=> #dsl::window(&#expr))
}

/// The enum variant of a keyword: `ring` -> `Ring`, `premul_sum` -> `PremulSum`.
fn variant(name: &str) -> Ident {
    let camel: String = name
        .split('_')
        .flat_map(|part| {
            let mut chars = part.chars();
            chars.next().into_iter().flat_map(char::to_uppercase).chain(chars).collect::<Vec<_>>()
        })
        .collect();
    Ident::new(&camel, Span::call_site())
}

/// The runtime call of a canonical collective call site. The call carries the span of the
/// macro's name, so the runtime's `#[track_caller]` reports the macro's own line and column.
pub(crate) fn expand_call(call: &CollectiveCall, site: Span, group: Option<TokenStream>) -> TokenStream {
    let (h, dsl) = (host_ident(), paths::dsl());
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
    options.extend(group);
    if let Some(signal) = &call.signal {
        let dsl = paths::at(signal.span(), dsl.clone());
        options.extend(quote_spanned!(signal.span()=> .signal(#dsl::signal(&#signal))));
    }
    let item = |name| paths::at(site, paths::root(name));
    let (ops, opts) = (item("ReduceOp"), item("Opts"));
    // The op setter: `.op(ReduceOp::Max)`, or `.premul_sum(scalar)` with its scalar.
    let op = match (&call.scale, call.op.unwrap_or(ReduceOp::Sum)) {
        (Some(scale), ReduceOp::PremulSum) => {
            let dsl = paths::at(scale.span(), dsl.clone());
            quote_spanned!(scale.span()=> .premul_sum(#dsl::scalar(#scale)))
        }
        (_, op) => {
            let op = variant(op.name());
            quote!(.op(#ops::#op))
        }
    };
    match call.collective {
        Collective::AllReduce => {
            let mode = variant(call.mode.unwrap_or(AllReduceMode::Mesh).name());
            let (builder, modes) = (item("AllReduce"), item("AllReduceMode"));
            let t = &windows[0];
            quote_spanned!(site=> #h.all_reduce(#t, #builder::mesh().mode(#modes::#mode)#op #options)?)
        }
        Collective::ReduceScatter => {
            let (builder, t) = (item("ReduceScatter"), &windows[0]);
            quote_spanned!(site=> #h.reduce_scatter(#t, #builder::new()#op #options)?)
        }
        Collective::Broadcast => {
            let (builder, t) = (item("Broadcast"), &windows[0]);
            let root = root_operand(call);
            quote_spanned!(site=> #h.broadcast(#t, #builder::root(#root)#options)?)
        }
        Collective::AllGather => {
            let (local, target) = (&windows[0], &windows[1]);
            quote_spanned!(site=> #h.all_gather(#local, #target, #opts::new()#options)?)
        }
        Collective::AllToAll => {
            let (input, target) = (&windows[0], &windows[1]);
            quote_spanned!(site=> #h.all_to_all(#input, #target, #opts::new()#options)?)
        }
        Collective::AllToAllV => {
            let (input, target) = (&windows[0], &windows[1]);
            let counts: Vec<TokenStream> = call.windows[2..]
                .iter()
                .map(|e| {
                    let dsl = paths::at(e.span(), dsl.clone());
                    quote_spanned!(e.span()=> #dsl::counts(&#e))
                })
                .collect();
            let (send, recv) = (&counts[0], &counts[1]);
            quote_spanned!(site=> #h.all_to_all_v(#input, #target, #send, #recv, #opts::new()#options)?)
        }
        Collective::AllGatherV => {
            let (local, target, counts) = (&windows[0], &windows[1], &call.windows[2]);
            let dsl = paths::at(counts.span(), dsl.clone());
            let counts = quote_spanned!(counts.span()=> #dsl::counts(&#counts));
            quote_spanned!(site=> #h.all_gather_v(#local, #target, #counts, #opts::new()#options)?)
        }
        Collective::Barrier => quote_spanned!(site=> #h.barrier(#opts::new()#options)?),
        Collective::Reduce => {
            let (builder, t) = (item("Reduce"), &windows[0]);
            let root = root_operand(call);
            quote_spanned!(site=> #h.reduce(#t, #builder::root(#root)#op #options)?)
        }
        Collective::Send | Collective::Recv => {
            let rank = |e: &Expr| {
                let dsl = paths::at(e.span(), dsl.clone());
                quote_spanned!(e.span()=> #dsl::rank(#e))
            };
            let w = &windows[0];
            if call.collective == Collective::Send {
                let builder = item("SendTo");
                let to = rank(call.to.as_ref().expect("`to` is required by the contract"));
                let from = call.from.as_ref().map(|f| {
                    let f = rank(f);
                    quote!(.from(#f))
                });
                quote_spanned!(site=> #h.send(#w, #builder::rank(#to)#from #options)?)
            } else {
                let builder = item("RecvFrom");
                let from = rank(call.from.as_ref().expect("`from` is required by the contract"));
                let to = call.to.as_ref().map(|t| {
                    let t = rank(t);
                    quote!(.to(#t))
                });
                quote_spanned!(site=> #h.recv(#w, #builder::rank(#from)#to #options)?)
            }
        }
        Collective::Gather | Collective::Scatter => {
            let (builder, first, second) = (item("Rooted"), &windows[0], &windows[1]);
            let root = root_operand(call);
            let method = Ident::new(call.collective.name(), site);
            quote_spanned!(site=> #h.#method(#first, #second, #builder::root(#root)#options)?)
        }
    }
}
