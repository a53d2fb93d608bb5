mod demo {
    #[allow(clippy::unit_arg, unreachable_code, clippy::needless_return)]
    pub fn run(
        __pld_host: &::pld::Host<'_>,
        t: &mut pld::Tensor<f32>,
        input: &pld::Tensor<f32>,
    ) -> ::pld::Result<()> {
        let __auto_all_reduce_0 = __pld_host.signal("__auto_all_reduce_0")?;
        let __auto_all_gather_0 = __pld_host.signal("__auto_all_gather_0")?;
        let __auto_all_gather_1 = __pld_host.signal("__auto_all_gather_1")?;
        #[allow(unused_variables)]
        let ranks = || __pld_host.ranks();
        #[allow(unused_variables)]
        let world_size = || __pld_host.nranks();
        ::core::result::Result::Ok({
            {
                let __pld_staged_0 = ::pld::__private::dsl::stage_tensor(
                    __pld_host,
                    "t",
                    &*t,
                )?;
                __pld_host
                    .all_reduce(
                        ::pld::__private::dsl::window(&__pld_staged_0),
                        ::pld::AllReduce::mesh()
                            .mode(::pld::AllReduceMode::Mesh)
                            .op(::pld::ReduceOp::Max)
                            .signal(::pld::__private::dsl::signal(&__auto_all_reduce_0)),
                    )?;
                ::pld::__private::dsl::unstage(__pld_host, &__pld_staged_0, &mut *t)?;
            };
            let out = __pld_host.window::<f32>("out", [4, 2])?;
            {
                let __pld_staged_0 = ::pld::__private::dsl::stage_tensor(
                    __pld_host,
                    "input",
                    &*input,
                )?;
                __pld_host
                    .all_gather(
                        ::pld::__private::dsl::window(&__pld_staged_0),
                        ::pld::__private::dsl::window(&out),
                        ::pld::Opts::new()
                            .signal(::pld::__private::dsl::signal(&__auto_all_gather_0)),
                    )?;
            };
            let mut owned = pld::Tensor::<f32>::zeros([4, 8]);
            {
                let __pld_staged_0 = ::pld::__private::dsl::stage_tensor(
                    __pld_host,
                    "input",
                    &*input,
                )?;
                let __pld_staged_1 = ::pld::__private::dsl::stage_tensor(
                    __pld_host,
                    "owned",
                    &owned,
                )?;
                __pld_host
                    .all_gather(
                        ::pld::__private::dsl::window(&__pld_staged_0),
                        ::pld::__private::dsl::window(&__pld_staged_1),
                        ::pld::Opts::new()
                            .signal(::pld::__private::dsl::signal(&__auto_all_gather_1)),
                    )?;
                ::pld::__private::dsl::unstage(__pld_host, &__pld_staged_1, &mut owned)?;
            };
            {
                let __pld_staged_0 = ::pld::__private::dsl::stage_tensor(
                    __pld_host,
                    "input",
                    &*input,
                )?;
                __pld_host
                    .send(
                        ::pld::__private::dsl::window(&__pld_staged_0),
                        ::pld::SendTo::rank(::pld::__private::dsl::rank(1))
                            .from(::pld::__private::dsl::rank(0)),
                    )?;
            };
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
        pub fn run(
            &self,
            __pld_arg0: &mut pld::Tensor<f32>,
            __pld_arg1: &pld::Tensor<f32>,
        ) -> ::pld::Result<()> {
            let __pld_host = self.world.host()?;
            let __pld_result = run(&__pld_host, __pld_arg0, __pld_arg1);
            let __pld_synced = __pld_host.finish();
            let __pld_value = __pld_result?;
            __pld_synced?;
            ::core::result::Result::Ok(__pld_value)
        }
    }
}
