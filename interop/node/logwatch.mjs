// LogWatch copies a stream to our standard error and lets a test wait for
// a line that matches a pattern.
export class LogWatch {
	#text = '';
	#waiters = new Set();

	constructor(stream) {
		stream.setEncoding('utf8');
		stream.on('data', (chunk) => {
			process.stderr.write(chunk);
			this.#text += chunk;
			for (const check of this.#waiters) check();
		});
	}

	// waitFor resolves to the match of re in what was logged, failing after
	// 10 s without one.
	waitFor(re) {
		return new Promise((resolve, reject) => {
			const check = () => {
				const m = this.#text.match(re);
				if (m) {
					this.#waiters.delete(check);
					clearTimeout(timer);
					resolve(m);
				}
			};
			const timer = setTimeout(() => {
				this.#waiters.delete(check);
				reject(new Error(`no line matching ${re} on the server's standard error`));
			}, 10_000);
			this.#waiters.add(check);
			check();
		});
	}
}
