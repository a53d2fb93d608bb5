#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let a = window!(f32, [8]);
        let b = window!(f32, [8]);
        send!(a, b, to = 1, from = 0);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
