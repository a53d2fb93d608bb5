#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let inbox = window!(f32, [8]);
        recv!(inbox, to = 1);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
