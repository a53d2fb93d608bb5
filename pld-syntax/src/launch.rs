//! `launch!(kernel(args..), device = r)`: queueing a kernel of the program on one rank.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream, Parser};
use syn::{Expr, Ident, Token};

use crate::kernel::Param;
use crate::suggest::unknown;

/// A checked launch.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchCall {
    /// The kernel.
    pub kernel: Ident,
    /// Its arguments, in parameter order.
    pub args: Vec<Expr>,
    /// The rank it runs on.
    pub device: Expr,
}

struct Raw {
    call: Expr,
    keywords: Vec<(Ident, Expr)>,
}

impl Parse for Raw {
    fn parse(input: ParseStream<'_>) -> syn::Result<Raw> {
        let call = input.parse()?;
        let mut keywords = Vec::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let name: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            keywords.push((name, input.parse()?));
        }
        Ok(Raw { call, keywords })
    }
}

/// The program's kernels: name and, when its signature is valid, parameters.
pub type Kernels = [(String, Option<Vec<Param>>)];

/// Parses and checks `launch!`'s arguments against the program's kernels.
pub fn parse_launch(tokens: proc_macro2::TokenStream, close: Span, kernels: &Kernels) -> syn::Result<LaunchCall> {
    let Raw { call, keywords } = Raw::parse.parse2(tokens)?;
    let Expr::Call(call) = call else {
        return Err(syn::Error::new_spanned(
            call,
            "launch! takes a kernel call: `launch!(kernel(args..), device = r)`",
        ));
    };
    let Expr::Path(path) = &*call.func else {
        return Err(syn::Error::new_spanned(&call.func, "launch! takes a kernel of this program by name"));
    };
    let Some(kernel) = path.path.get_ident().cloned() else {
        return Err(syn::Error::new_spanned(&call.func, "launch! takes a kernel of this program by name"));
    };
    let names: Vec<&str> = kernels.iter().map(|(n, _)| n.as_str()).collect();
    let Some((_, params)) = kernels.iter().find(|(n, _)| kernel == n) else {
        return Err(syn::Error::new_spanned(&kernel, unknown("kernel", &kernel.to_string(), &names)));
    };
    let mut device = None;
    for (name, value) in keywords {
        if name != "device" {
            return Err(syn::Error::new_spanned(
                &name,
                format!("launch!: {}", unknown("keyword", &name.to_string(), &["device"])),
            ));
        }
        if device.replace(value).is_some() {
            return Err(syn::Error::new_spanned(&name, "duplicate keyword `device`"));
        }
    }
    let Some(device) = device else {
        return Err(syn::Error::new(
            close,
            format!("kernel `{kernel}` needs a device: `launch!({kernel}(..), device = r)`"),
        ));
    };
    if let Some(params) = params
        && params.len() != call.args.len()
    {
        return Err(syn::Error::new_spanned(
            &call,
            format!("kernel `{kernel}` takes {} argument(s), found {}", params.len(), call.args.len()),
        ));
    }
    Ok(LaunchCall { kernel, args: call.args.into_iter().collect(), device })
}
