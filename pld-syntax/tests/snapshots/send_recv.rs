mod demo {
    #[allow(clippy::unit_arg, unreachable_code, clippy::needless_return)]
    pub fn run(__pld_host: &::pld::Host<'_>) -> ::pld::Result<()> {
        let __pld_group_0 = ::core::cell::OnceCell::new();
        #[allow(unused_variables)]
        let ranks = || __pld_host.ranks();
        #[allow(unused_variables)]
        let world_size = || __pld_host.nranks();
        ::core::result::Result::Ok({
            let out = __pld_host.window::<f32>("out", [8])?;
            let inbox = __pld_host.window::<f32>("inbox", [8])?;
            let n = world_size();
            for r in ranks() {
                __pld_host
                    .send(
                        ::pld::__private::dsl::window(&out),
                        ::pld::SendTo::rank(::pld::__private::dsl::rank((r + 1) % n))
                            .from(::pld::__private::dsl::rank(r)),
                    )?;
            }
            for r in ranks() {
                __pld_host
                    .recv(
                        ::pld::__private::dsl::window(&inbox),
                        ::pld::RecvFrom::rank(
                                ::pld::__private::dsl::rank((r + n - 1) % n),
                            )
                            .to(::pld::__private::dsl::rank(r)),
                    )?;
            }
            __pld_host
                .send(
                    ::pld::__private::dsl::window(&out),
                    ::pld::SendTo::rank(::pld::__private::dsl::rank(1))
                        .group({
                            if __pld_group_0.get().is_none() {
                                let _ = __pld_group_0.set(__pld_host.group(&[0, 1])?);
                            }
                            __pld_group_0.get().expect("made just above")
                        }),
                )?;
            __pld_host
                .recv(
                    ::pld::__private::dsl::window(&inbox),
                    ::pld::RecvFrom::rank(::pld::__private::dsl::rank(0)).nranks(2),
                )?;
        })
    }
    /// The `demo` program on a world: one method per host function. Made by [`load`].
    #[derive(Clone, Copy, Debug)]
    pub struct Program<'w> {
        world: &'w ::pld::World,
    }
    /// Loads the `demo` program onto `world`.
    pub fn load(world: &::pld::World) -> ::pld::Result<Program<'_>> {
        ::core::result::Result::Ok(Program { world })
    }
    impl<'w> Program<'w> {
        /// The world the program runs on.
        pub fn world(&self) -> &'w ::pld::World {
            self.world
        }
        ///
        /// Runs the host function on the program's world in a host scope of its own, and
        /// returns once every rank finished, or with the first error of any rank.
        pub fn run(&self) -> ::pld::Result<()> {
            let __pld_host = self.world.host()?;
            let __pld_result = run(&__pld_host);
            let __pld_synced = __pld_host.finish();
            let __pld_value = __pld_result?;
            __pld_synced?;
            ::core::result::Result::Ok(__pld_value)
        }
    }
}
