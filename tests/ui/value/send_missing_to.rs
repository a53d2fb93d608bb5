#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let out = window!(f32, [8]);
        send!(out, from = 0);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
