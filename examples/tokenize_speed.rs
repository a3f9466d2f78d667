//! Times what `lase train` does to every training sentence before its first step:
//! `SentenceTokenizer::encode_to_store` over a text file (one sentence per line), with the
//! trainer's chunk of 16,384 sentences and its cut at 64 tokens (`train_max_tokens` of the
//! shipped recipes). Reads only the model folder's tokenizer.json (so it runs where the
//! weights are not). For bench/tokenize_speed.sh.
//! Usage: tokenize_speed MODEL_DIR FILE [REPEATS]
//! Prints one line per repeat: sentences, tokens, a hash of the ids, seconds, sentences/s.

use lase::tokenizer::SentenceTokenizer;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() >= 3,
        "usage: tokenize_speed MODEL_DIR FILE [REPEATS]"
    );
    let repeats: usize = args.get(3).map_or(Ok(1), |r| r.parse())?;
    let tokenizer = SentenceTokenizer::from_file(
        &std::path::Path::new(&args[1]).join("tokenizer.json"),
        64,
        0,
        false,
    )?;
    let lines = lase::io::text::read_lines(std::path::Path::new(&args[2]))?;
    for _ in 0..repeats {
        let start = std::time::Instant::now();
        let store = tokenizer.encode_to_store(lines.iter().map(String::as_str), 16_384)?;
        let seconds = start.elapsed().as_secs_f64();
        // What was stored, outside the timing: the token count and an FNV-1a hash of every
        // id and type id in order, so two builds can be checked to agree.
        let (mut tokens, mut hash) = (0usize, 0xcbf2_9ce4_8422_2325u64);
        for i in 0..store.len() {
            let t = store.get(i);
            tokens += t.len();
            for v in t.ids.iter().chain(&t.type_ids) {
                hash = (hash ^ *v as u64).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        println!(
            "{} sentences, {tokens} tokens, ids hash {hash:016x}, {seconds:.2} s, {:.0} sentences/s",
            store.len(),
            lines.len() as f64 / seconds
        );
    }
    Ok(())
}
