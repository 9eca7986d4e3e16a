/** Raised when a prerequisite of the embedded runtime is missing or damaged; the CLIs print only its message. */
export class PrerequisiteError extends Error {}
