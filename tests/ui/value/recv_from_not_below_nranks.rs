#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let inbox = window!(u8, [8]);
        recv!(inbox, from = 4, to = 0, nranks = 4);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
