#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let out = window!(f32, [8]);
        let s = signal!();
        send!(out, to = 1, from = 0, signal = s);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
