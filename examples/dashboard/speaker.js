// speaker.js: the node's speaker on the page, with no browser API: what the retained
// `<base>/sound` says ({"available":true,"muted":false,"volume":100}), what the footer's
// Node speaker control shows for it, and the `sound` commands it sends on `<base>/cmd`
// (docs/API.md). The node's speaker is the Pi's loudspeaker, heard by the whole room; the
// page's own Sound button is this screen's WebAudio, and the two never touch each other.
// footer.js draws the control; Tests/page/speaker.test.mjs checks this file in Node against the
// protocol's examples (Tests/Fixtures/protocol/commands.json).

/** The speaker a `<base>/sound` payload describes, or null (empty, not JSON, not an object). */
function parseSound(payload) {
  if (!payload) return null;
  let v;
  try { v = JSON.parse(payload); } catch (e) { return null; }
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const volume = typeof v.volume === "number" && isFinite(v.volume) ? Math.max(0, Math.min(100, Math.round(v.volume))) : null;
  return { available: v.available === true, muted: v.muted === true, volume };
}

/**
 * What the footer shows for the node's speaker: hidden without a speaker (`available`
 * false, nothing heard yet) or on a page without controls; else a toggle labelled by its
 * state ("Node speaker: on" / "Node speaker: muted") and a volume slider.
 */
function speakerView(sound, opts) {
  const o = opts || {};
  if (!sound || !sound.available || o.controls === false) return { hidden: true };
  const volume = sound.volume == null ? 100 : sound.volume;
  return {
    hidden: false,
    label: "Node speaker: " + (sound.muted ? "muted" : "on"),
    pressed: !sound.muted,
    volume,
    volumeLabel: "Node speaker volume: " + volume + " %",
    title: sound.muted
      ? "The node's speaker (the room's loudspeaker) is muted: tap to unmute it. This screen's sound is the Sound button."
      : "The node's speaker (the room's loudspeaker) plays the cues: tap to mute it for everyone. This screen's sound is the Sound button.",
  };
}

/** The command that mutes (true) or unmutes (false) the node's speaker. */
function muteCommand(muted) { return { action: "sound", muted: !!muted }; }

/** The command that sets the node's speaker volume (0–100 %, whole numbers). */
function volumeCommand(volume) {
  const n = Number(volume);
  if (!isFinite(n)) return null;
  return { action: "sound", volume: Math.max(0, Math.min(100, Math.round(n))) };
}

export { parseSound, speakerView, muteCommand, volumeCommand };
