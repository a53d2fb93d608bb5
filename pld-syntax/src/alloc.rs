//! `window!`, `signal!`, `stage_in!` and `stage_out!`: argument grammar.

use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, Macro, Token, Type};

use crate::dsl::DslMacro;
use crate::dsl::close_span;
use crate::suggest::{is_other_primitive, unknown_element};

/// `window!(T, shape)`.
pub struct WindowArgs {
    /// The element type.
    pub elem: Type,
    /// The shape: anything `Into<pld::Shape>` (`[1, SIZE]`, `n`, a `Vec<usize>`).
    pub shape: Expr,
}

impl Parse for WindowArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<WindowArgs> {
        let elem = input.parse()?;
        if input.is_empty() {
            return Err(syn::Error::new(
                input.span(),
                "window! needs a shape after the element type: `window!(f32, [1, SIZE])`",
            ));
        }
        input.parse::<Token![,]>()?;
        let shape = input.parse()?;
        input.parse::<Option<Token![,]>>()?;
        Ok(WindowArgs { elem, shape })
    }
}

pub(crate) fn check_window(mac: &Macro) -> syn::Result<()> {
    if mac.tokens.is_empty() {
        return Err(syn::Error::new(
            close_span(mac),
            "window! takes an element type and a shape: `window!(f32, [1, SIZE])`",
        ));
    }
    let args = mac.parse_body::<WindowArgs>()?;
    // A primitive pld has no element type for is one error here, on the type, rather than one
    // per runtime call the window reaches (rustc reports each unmet `Element` bound).
    if let Type::Path(path) = &args.elem
        && path.qself.is_none()
        && let Some(ident) = path.path.get_ident()
        && is_other_primitive(&ident.to_string())
    {
        return Err(syn::Error::new_spanned(ident, unknown_element(&ident.to_string())));
    }
    Ok(())
}

pub(crate) fn check_signal(mac: &Macro) -> syn::Result<()> {
    match mac.tokens.clone().into_iter().next() {
        None => Ok(()),
        Some(first) => {
            Err(syn::Error::new(first.span(), "signal! takes no arguments: a signal has one i32 cell per rank"))
        }
    }
}

/// `stage_in!(window, rank, data)` / `stage_out!(window, rank, data)`.
pub fn stage_args(mac: &Macro) -> syn::Result<[Expr; 3]> {
    let args = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(mac.tokens.clone())?;
    let n = args.len();
    <[Expr; 3]>::try_from(args.into_iter().collect::<Vec<_>>()).map_err(|args| {
        let message = "takes a window, a rank and host data: `(window, rank, data)`";
        match args.get(3) {
            Some(extra) => syn::Error::new_spanned(extra, format!("unexpected argument; this macro {message}")),
            None => syn::Error::new(close_span(mac), format!("{n} argument(s) given; this macro {message}")),
        }
    })
}

pub(crate) fn check_stage(_: DslMacro, mac: &Macro) -> syn::Result<()> {
    stage_args(mac).map(drop)
}
