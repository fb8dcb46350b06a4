/** The widget's styles, inside its shadow root: the host page's styles do not reach them, nor they the page. */
export const styles = `
:host { all: initial; }
* { box-sizing: border-box; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.launcher {
  position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; width: 56px; height: 56px; border: 0;
  border-radius: 50%; background: #1f4fd1; color: #fff; font-size: 26px; cursor: pointer;
  box-shadow: 0 4px 14px rgba(0,0,0,.25);
}
.launcher:focus-visible, button:focus-visible, textarea:focus-visible { outline: 3px solid #ffb300; outline-offset: 2px; }
.panel {
  position: fixed; right: 20px; bottom: 88px; z-index: 2147483000; width: 360px; height: 520px;
  max-height: calc(100vh - 108px); display: flex; flex-direction: column; background: #fff; color: #1a1a1a;
  border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.3); overflow: hidden;
}
.panel[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; padding: 12px 16px; background: #1f4fd1; color: #fff; }
header h2 { margin: 0; font-size: 16px; }
header button { background: none; border: 0; color: #fff; font-size: 22px; cursor: pointer; min-width: 44px; min-height: 44px; }
.log { flex: 1; overflow-y: auto; padding: 12px; }
.log ol { display: flex; flex-direction: column; gap: 8px; margin: 0; padding: 0; list-style: none; }
.log li { max-width: 80%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; word-wrap: break-word; font-size: 14px; line-height: 1.4; }
.visitor { align-self: flex-end; background: #1f4fd1; color: #fff; }
.business { align-self: flex-start; background: #eceff4; color: #1a1a1a; }
.pending { opacity: .6; }
.typing { margin: 0; padding: 0 16px; min-height: 18px; font-size: 12px; font-style: italic; color: #4a5160; }
.log img { display: block; max-width: 100%; max-height: 240px; border-radius: 8px; margin-top: 4px; }
.log a { display: block; color: inherit; text-decoration: underline; margin-top: 4px; }
.notice { margin: 0; padding: 8px 16px; background: #fff4d6; color: #4d3800; font-size: 13px; }
.notice[hidden], .ask[hidden] { display: none; }
.ask { flex-wrap: wrap; align-items: center; background: #f5f7fb; }
.ask label { width: 100%; font-size: 13px; }
.ask input { flex: 1; border: 1px solid #b8bfcc; border-radius: 8px; padding: 8px; font-size: 16px; min-height: 44px; }
.attach { display: flex; align-items: center; justify-content: center; min-width: 44px; min-height: 44px; font-size: 20px; cursor: pointer; }
.attach input { position: absolute; width: 1px; height: 1px; opacity: 0; }
.attach:focus-within { outline: 3px solid #ffb300; }
form { display: flex; gap: 8px; padding: 8px; border-top: 1px solid #dde1e8; }
textarea { flex: 1; resize: none; border: 1px solid #b8bfcc; border-radius: 8px; padding: 8px; font-size: 16px; min-height: 44px; }
form button { border: 0; border-radius: 8px; background: #1f4fd1; color: #fff; padding: 0 16px; font-size: 14px; min-height: 44px; cursor: pointer; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (max-width: 480px) {
  .panel { right: 0; bottom: 0; width: 100vw; height: 100%; max-height: none; border-radius: 0; }
}
`;
