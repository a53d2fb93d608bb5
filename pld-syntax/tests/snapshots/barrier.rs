mod demo {
    #[allow(clippy::unit_arg, unreachable_code, clippy::needless_return)]
    pub fn run(__pld_host: &::pld::Host<'_>) -> ::pld::Result<usize> {
        let __auto_barrier_0 = __pld_host.signal("__auto_barrier_0")?;
        let __auto_barrier_1 = __pld_host.signal("__auto_barrier_1")?;
        #[allow(unused_variables)]
        let ranks = || __pld_host.ranks();
        #[allow(unused_variables)]
        let world_size = || __pld_host.nranks();
        ::core::result::Result::Ok({
            let s = __pld_host.signal("s")?;
            __pld_host
                .barrier(
                    ::pld::Opts::new()
                        .signal(::pld::__private::dsl::signal(&__auto_barrier_0)),
                )?;
            for _ in 0..10 {
                __pld_host
                    .barrier(
                        ::pld::Opts::new()
                            .signal(::pld::__private::dsl::signal(&__auto_barrier_1)),
                    )?;
                __pld_host
                    .barrier(
                        ::pld::Opts::new().signal(::pld::__private::dsl::signal(&s)),
                    )?;
            }
            if world_size() > 1 {
                return ::core::result::Result::Ok(world_size());
            }
            0
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
        pub fn run(&self) -> ::pld::Result<usize> {
            let __pld_host = self.world.host()?;
            let __pld_result = run(&__pld_host);
            let __pld_synced = __pld_host.finish();
            let __pld_value = __pld_result?;
            __pld_synced?;
            ::core::result::Result::Ok(__pld_value)
        }
    }
}
