#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let out = window!(i64, [2]);
        send!(out, to = -1, from = 0);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
