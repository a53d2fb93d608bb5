mod demo {
    #[allow(clippy::unit_arg, unreachable_code, clippy::needless_return)]
    pub fn run(__pld_host: &::pld::Host<'_>) -> ::pld::Result<()> {
        let __auto_all_reduce_0 = __pld_host.signal("__auto_all_reduce_0")?;
        let __auto_reduce_scatter_0 = __pld_host.signal("__auto_reduce_scatter_0")?;
        #[allow(unused_variables)]
        let ranks = || __pld_host.ranks();
        #[allow(unused_variables)]
        let world_size = || __pld_host.nranks();
        ::core::result::Result::Ok({
            let data = __pld_host.window::<f32>("data", [64])?;
            __pld_host
                .all_reduce(
                    ::pld::__private::dsl::window(&data),
                    ::pld::AllReduce::mesh()
                        .mode(::pld::AllReduceMode::Auto)
                        .op(::pld::ReduceOp::Avg)
                        .signal(::pld::__private::dsl::signal(&__auto_all_reduce_0)),
                )?;
            let rows = __pld_host.window::<i32>("rows", [4, 16])?;
            __pld_host
                .reduce_scatter(
                    ::pld::__private::dsl::window(&rows),
                    ::pld::ReduceScatter::new()
                        .op(::pld::ReduceOp::Avg)
                        .signal(::pld::__private::dsl::signal(&__auto_reduce_scatter_0)),
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
