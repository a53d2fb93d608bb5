mod demo {
    #[allow(clippy::unit_arg, unreachable_code, clippy::needless_return)]
    pub fn run(__pld_host: &::pld::Host<'_>) -> ::pld::Result<Vec<i32>> {
        let __auto_all_to_all_v_0 = __pld_host.signal("__auto_all_to_all_v_0")?;
        #[allow(unused_variables)]
        let ranks = || __pld_host.ranks();
        #[allow(unused_variables)]
        let world_size = || __pld_host.nranks();
        ::core::result::Result::Ok({
            let input = __pld_host.window::<f32>("input", [4 * 3, 2])?;
            let target = __pld_host.window::<f32>("target", [4 * 3, 2])?;
            let send = __pld_host.window::<i32>("send", [4])?;
            let recv = __pld_host.window::<i32>("recv", [4])?;
            for r in ranks() {
                __pld_host
                    .write(
                        ::pld::__private::dsl::window(&send),
                        r,
                        ::pld::__private::dsl::host_data(&[1, 2, 3, 0]),
                    )?;
            }
            for _ in 0..3 {
                __pld_host
                    .all_to_all_v(
                        ::pld::__private::dsl::window(&input),
                        ::pld::__private::dsl::window(&target),
                        ::pld::__private::dsl::counts(&send),
                        ::pld::__private::dsl::counts(&recv),
                        ::pld::Opts::new()
                            .nranks(4)
                            .signal(
                                ::pld::__private::dsl::signal(&__auto_all_to_all_v_0),
                            ),
                    )?;
            }
            let mut out = vec![0; 4];
            __pld_host
                .read_into(
                    ::pld::__private::dsl::window(&recv),
                    0,
                    ::pld::__private::dsl::host_data_mut(&mut out),
                )?;
            out
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
        pub fn run(&self) -> ::pld::Result<Vec<i32>> {
            let __pld_host = self.world.host()?;
            let __pld_result = run(&__pld_host);
            let __pld_synced = __pld_host.finish();
            let __pld_value = __pld_result?;
            __pld_synced?;
            ::core::result::Result::Ok(__pld_value)
        }
    }
}
