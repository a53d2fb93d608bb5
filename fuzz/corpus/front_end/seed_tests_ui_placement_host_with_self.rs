#[pld::program]
mod demo {
    pub struct S;

    impl S {
        pub fn ok(&self) {}
    }

    #[pld::host]
    pub fn run(self) {}
}

fn main() {
    demo::S.ok();
}
